/// org.freedesktop.DBus.Introspectable: the interfaces of each object, and its children.
enum Introspection {
    static let properties = """
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
            <method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>
            <method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>
            <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
          </interface>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg type="s" direction="out"/></method>
          </interface>

        """

    static let service = """
          <interface name="org.freedesktop.Secret.Service">
            <method name="OpenSession"><arg type="s" direction="in"/><arg type="v" direction="in"/><arg type="v" direction="out"/><arg type="o" direction="out"/></method>
            <method name="CreateCollection"><arg type="a{sv}" direction="in"/><arg type="s" direction="in"/><arg type="o" direction="out"/><arg type="o" direction="out"/></method>
            <method name="SearchItems"><arg type="a{ss}" direction="in"/><arg type="ao" direction="out"/><arg type="ao" direction="out"/></method>
            <method name="Unlock"><arg type="ao" direction="in"/><arg type="ao" direction="out"/><arg type="o" direction="out"/></method>
            <method name="Lock"><arg type="ao" direction="in"/><arg type="ao" direction="out"/><arg type="o" direction="out"/></method>
            <method name="GetSecrets"><arg type="ao" direction="in"/><arg type="o" direction="in"/><arg type="a{o(oayays)}" direction="out"/></method>
            <method name="ReadAlias"><arg type="s" direction="in"/><arg type="o" direction="out"/></method>
            <method name="SetAlias"><arg type="s" direction="in"/><arg type="o" direction="in"/></method>
            <property name="Collections" type="ao" access="read"/>
            <signal name="CollectionCreated"><arg type="o"/></signal>
            <signal name="CollectionDeleted"><arg type="o"/></signal>
            <signal name="CollectionChanged"><arg type="o"/></signal>
          </interface>

        """

    static let collection = """
          <interface name="org.freedesktop.Secret.Collection">
            <method name="Delete"><arg type="o" direction="out"/></method>
            <method name="SearchItems"><arg type="a{ss}" direction="in"/><arg type="ao" direction="out"/></method>
            <method name="CreateItem"><arg type="a{sv}" direction="in"/><arg type="(oayays)" direction="in"/><arg type="b" direction="in"/><arg type="o" direction="out"/><arg type="o" direction="out"/></method>
            <property name="Items" type="ao" access="read"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Locked" type="b" access="read"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
            <signal name="ItemCreated"><arg type="o"/></signal>
            <signal name="ItemDeleted"><arg type="o"/></signal>
            <signal name="ItemChanged"><arg type="o"/></signal>
          </interface>

        """

    static let item = """
          <interface name="org.freedesktop.Secret.Item">
            <method name="Delete"><arg type="o" direction="out"/></method>
            <method name="GetSecret"><arg type="o" direction="in"/><arg type="(oayays)" direction="out"/></method>
            <method name="SetSecret"><arg type="(oayays)" direction="in"/></method>
            <property name="Locked" type="b" access="read"/>
            <property name="Attributes" type="a{ss}" access="readwrite"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
          </interface>

        """

    static let session = """
          <interface name="org.freedesktop.Secret.Session">
            <method name="Close"/>
          </interface>

        """

    static let prompt = """
          <interface name="org.freedesktop.Secret.Prompt">
            <method name="Prompt"><arg type="s" direction="in"/></method>
            <method name="Dismiss"/>
            <signal name="Completed"><arg type="b"/><arg type="v"/></signal>
          </interface>

        """

    static func xml(for path: String, provider p: SecretServiceProvider) -> String {
        var body = ""
        var children: [String] = []
        switch p.resolve(path) {
        case .service?:
            body = properties + service
            children = ["collection", "aliases", "session", "prompt"]
        case .collection(let name)?:
            body = properties + collection
            children = p.collections[name]?.items.keys.sorted() ?? []
        case .item?: body = properties + item
        case .session?: body = properties + session
        case .prompt?: body = properties + prompt
        case nil:
            if path == SecretServiceProvider.root + "/collection" {
                children = p.collections.keys.sorted()
            } else if path == SecretServiceProvider.root + "/aliases" {
                children = p.aliases.keys.sorted()
            } else if path == "/" || path == "/org" || path == "/org/freedesktop" {
                children = [path == "/" ? "org" : path == "/org" ? "freedesktop" : "secrets"]
            }
        }
        let nodes = children.map { "  <node name=\"\($0)\"/>\n" }.joined()
        return """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node>
            \(body)\(nodes)</node>

            """
    }
}
