#!/usr/bin/python3
"""One client session against whatever owns org.freedesktop.secrets on the session bus.

Written against the Secret Service API with clients nobody here wrote (secretstorage, jeepney,
keyring, as Debian packages them), it prints a transcript of what the service answered, with
object paths and times left out, so that the same script run against gnome-keyring-daemon and
against latchkey-secret-service can be compared line by line (SecretServiceTests).
"""
import sys

import keyring.backends.SecretService
import secretstorage
from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

out = []


def say(*words):
    out.append(" ".join(str(w) for w in words))


raw = open_dbus_connection(bus="SESSION")
SERVICE = "/org/freedesktop/secrets"


def call(path, interface, method, signature=None, body=()):
    addr = DBusAddress(path, bus_name="org.freedesktop.secrets", interface=interface)
    reply = raw.send_and_get_reply(new_method_call(addr, method, signature, body), timeout=30)
    if reply.header.message_type == MessageType.error:
        return ("error", reply.header.fields[HeaderFields.error_name])
    return ("ok", reply.body)


conn = secretstorage.dbus_init()
col = secretstorage.get_default_collection(conn)
say("default collection locked:", col.is_locked())


def labels(items):
    return sorted(i.get_label() for i in items)


a = col.create_item("A", {"service": "s1", "user": "u1"}, b"one")
b = col.create_item("B", {"service": "s1", "user": "u2"}, b"two")
say("A attributes:", sorted(a.get_attributes().items()))
say("A secret:", a.get_secret(), a.get_secret_content_type())
say("search service=s1:", labels(col.search_items({"service": "s1"})))
say("search service=s1 user=u2:", labels(col.search_items({"service": "s1", "user": "u2"})))
say("search nope=x:", labels(col.search_items({"nope": "x"})))
say("search {} includes A and B:", {"A", "B"} <= set(labels(col.search_items({}))))
say("service search service=s1:", labels(secretstorage.search_items(conn, {"service": "s1"})))

# CreateItem with replace: the item with the same attributes is changed, no new one.
a2 = col.create_item("A2", {"service": "s1", "user": "u1"}, b"uno", replace=True)
say("after replace:", labels(col.search_items({"service": "s1"})), a2.get_secret())
say("replace kept the item:", a2.item_path == a.item_path)
# Without replace, the same attributes make a second item.
dup = col.create_item("A3", {"service": "s1", "user": "u1"}, b"tres", replace=False)
say("without replace:", labels(col.search_items({"service": "s1", "user": "u1"})))
dup.delete()

b.set_label("B2")
b.set_attributes({"service": "s1", "user": "u2", "extra": "yes"})
say("B after set:", b.get_label(), sorted(b.get_attributes().items()))
say("search extra=yes:", labels(col.search_items({"extra": "yes"})))

c = col.create_item("C", {"service": "s2"}, b"\x00\x01binary", content_type="application/octet-stream")
say("C secret:", c.get_secret(), c.get_secret_content_type())
c.set_secret(b"changed", content_type="text/plain")
say("C after set_secret:", c.get_secret(), c.get_secret_content_type())

# A plain session (no encryption), through jeepney.
kind, body = call(SERVICE, "org.freedesktop.Secret.Service", "OpenSession", "sv", ("plain", ("s", "")))
say("plain OpenSession:", kind, body[0] if kind == "ok" else body)
plain = body[1]
kind, body = call(SERVICE, "org.freedesktop.Secret.Service", "GetSecrets", "aoo", ([c.item_path], plain))
secrets = body[0] if kind == "ok" else {}
say("plain GetSecrets:", kind, [(bytes(v[1]), bytes(v[2]), v[3]) for v in secrets.values()])
kind, body = call(c.item_path, "org.freedesktop.Secret.Item", "GetSecret", "o", (plain,))
say("plain GetSecret:", kind, bytes(body[0][2]) if kind == "ok" else body)
say("Close:", call(plain, "org.freedesktop.Secret.Session", "Close")[0])
say("GetSecret after Close:", call(c.item_path, "org.freedesktop.Secret.Item", "GetSecret", "o", (plain,)))

# Errors a client can meet.
say("unknown algorithm:", call(SERVICE, "org.freedesktop.Secret.Service", "OpenSession", "sv", ("bogus", ("s", ""))))
say("wrong signature:", call(SERVICE, "org.freedesktop.Secret.Service", "SearchItems", "s", ("x",))[0])
say("unknown method:", call(SERVICE, "org.freedesktop.Secret.Service", "Frobnicate")[0])
say("ReadAlias default is a collection:", call(SERVICE, "org.freedesktop.Secret.Service", "ReadAlias", "s", ("default",))[1][0].startswith("/org/freedesktop/secrets/collection/"))
say("ReadAlias nothing:", call(SERVICE, "org.freedesktop.Secret.Service", "ReadAlias", "s", ("nothing",)))

# python-keyring over the Secret Service.
kr = keyring.backends.SecretService.Keyring()
kr.set_password("kr-service", "bob", "pw1")
say("keyring get:", kr.get_password("kr-service", "bob"))
kr.set_password("kr-service", "bob", "pw2")
say("keyring get after set again:", kr.get_password("kr-service", "bob"))
kr.delete_password("kr-service", "bob")
say("keyring after delete:", kr.get_password("kr-service", "bob"))

for item in (a, b, c):
    item.delete()
say("after deletes:", labels(col.search_items({"service": "s1"})), labels(col.search_items({"service": "s2"})))

# Locking the default collection: searches then answer with locked items.
if len(sys.argv) > 1 and sys.argv[1] == "--lock":
    d = col.create_item("D", {"service": "s3"}, b"four")
    kind, body = call(SERVICE, "org.freedesktop.Secret.Service", "Lock", "ao", ([col.collection_path],))
    say("Lock:", kind)
    say("locked:", col.is_locked())
    kind, body = call(SERVICE, "org.freedesktop.Secret.Service", "SearchItems", "a{ss}", ({"service": "s3"},))
    say("SearchItems while locked (unlocked, locked):", len(body[0]), len(body[1]))
    say("GetSecret while locked:", call(d.item_path, "org.freedesktop.Secret.Item", "GetSecret", "o", (plain,))[0])

print("\n".join(out))
