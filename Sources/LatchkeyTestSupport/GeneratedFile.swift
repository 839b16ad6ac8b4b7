import Foundation

/// A file of the package that is made from a table (`AttributeSchema`) and kept in the
/// repository, so that it can be read, reviewed and documented like any other source.
///
/// A test renders the file from the table and compares it with the one on disk: a row added
/// without the file made again fails the suite. `make generate` runs those tests with
/// `LATCHKEY_GENERATE=1`, under which they write the rendering instead (`make test` unsets every
/// `LATCHKEY_*` variable, so the suite never writes a source).
package struct GeneratedFile {
    /// The path from the package's top (`Sources/Latchkey/Items/AttributeKey+Schema.swift`).
    package let path: String
    /// The content the table gives.
    package let rendered: String

    package init(_ path: String, _ rendered: String) {
        self.path = path
        self.rendered = rendered
    }

    /// Nil when the file holds `rendered` (or has just been written, under
    /// `LATCHKEY_GENERATE=1`); otherwise what is wrong and how to fix it.
    package func mismatch(packageRoot: URL) throws -> String? {
        let url = packageRoot.appendingPathComponent(path)
        let onDisk = try? String(contentsOf: url, encoding: .utf8)
        if onDisk == rendered { return nil }
        if ProcessInfo.processInfo.environment["LATCHKEY_GENERATE"] == "1" {
            try rendered.write(to: url, atomically: true, encoding: .utf8)
            return nil
        }
        return "\(path) is not what AttributeSchema gives: run 'make generate' (and commit the file)"
    }

    /// The package's top directory, from the path of a test file two levels below it.
    package static func packageRoot(of testFile: String) -> URL {
        URL(fileURLWithPath: testFile).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }
}
