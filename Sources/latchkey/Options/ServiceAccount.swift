import ArgumentParser
import Latchkey

/// `SERVICE[/ACCOUNT]`: a generic password by its service and account, the way `exec` and
/// `env` take it after `NAME=` and `find`, `show` and `delete` take it as an argument
/// (docs/CLI.md). The text after the last `/` is the account, so a service may hold `/`
/// (`https://example.com/api/alice`) and an account may not; without a `/`, or with nothing
/// after the last one, the service alone (any account).
struct ServiceAccount: Equatable {
    var service: String
    var account: String?

    /// nil when `text` names no service (empty, or `/ACCOUNT`).
    init?<S: StringProtocol>(_ text: S) {
        var service = String(text), account: String?
        if let slash = text.lastIndex(of: "/") {
            service = String(text[..<slash])
            let rest = String(text[text.index(after: slash)...])
            account = rest.isEmpty ? nil : rest
        }
        guard !service.isEmpty else { return nil }
        self.service = service
        self.account = account
    }

    /// What the item is, for messages: `service 'mail' and account 'alice'`.
    var selection: String { "service '\(service)'" + (account.map { " and account '\($0)'" } ?? "") }

    /// The attributes a query for it names: `svce`, and `acct` when given.
    var attributes: [String: AttributeValue] {
        var out: [String: AttributeValue] = ["svce": .string(service)]
        if let account { out["acct"] = .string(account) }
        return out
    }

    /// The help of the `SERVICE/ACCOUNT` argument of find, show and delete.
    static func argumentHelp(_ what: String) -> ArgumentHelp {
        ArgumentHelp(
            "\(what) generic password: SERVICE/ACCOUNT, or SERVICE.",
            discussion: CommandLineForms.details(
                "The account is what follows the last '/', so a service may contain '/' and an account may not, as in exec's --item."
            ),
            valueName: "service/account")
    }

    /// `query` with the attributes of `selector` (`SERVICE[/ACCOUNT]`) added.
    /// - Throws: `UsageError` when the selector names no service, the query is of another class
    ///   than genp, or --service (--account) gives the service (account) as well.
    static func query(_ query: Query, selector: String?, command: String) throws -> Query {
        guard let selector else { return query }
        guard let chosen = ServiceAccount(selector) else {
            throw UsageError("'\(selector)' names no service; write SERVICE/ACCOUNT, or SERVICE", command: command)
        }
        guard query.itemClass == .genericPassword else {
            throw UsageError(
                "SERVICE/ACCOUNT ('\(selector)') selects a generic password; for --class \(query.itemClass.rawValue) use the attribute options",
                command: command)
        }
        var q = query
        for (code, value) in chosen.attributes {
            guard q.attributes[code] == nil else {
                let option = code == "svce" ? "--service" : "--account"
                throw UsageError(
                    "'\(selector)' and \(option) both give the \(code == "svce" ? "service" : "account"); give one of them",
                    command: command)
            }
            q.attributes[code] = value
        }
        return q
    }
}
