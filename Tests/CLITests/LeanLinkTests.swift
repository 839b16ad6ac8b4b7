import Foundation
import Testing

/// The `latchkey` binary links FoundationEssentials, not Foundation: no Foundation library, no
/// ICU (Foundation's bundled copy or the system's) among the libraries it names, and, when the
/// Swift libraries are linked statically into it, none of Foundation's ICU symbols
/// (issue 16 §4: a process that links Foundation pays for ICU at every start).
@Suite struct LeanLinkTests {
    static let forbiddenLibraries = [
        "libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so",
        "libFoundationNetworking.so", "libFoundationXML.so", "libicu"
    ]
    /// Symbols of the ICU copy that Foundation links (`swift_`-prefixed ICU functions) and of
    /// FoundationInternationalization.
    static let forbiddenSymbols = ["swift_ucol_open", "swift_ubrk_open", "swift_udat_open", "ICUDateFormatter"]

    @Test func cli_linksNeitherFoundationNorICU() throws {
        #if os(Linux)
            let binary = try CLISandbox.binary()
            let elf = try ELFFile(Array(Data(contentsOf: binary)))
            let needed = elf.neededLibraries()
            #expect(!needed.isEmpty || elf.isStatic, "a dynamically linked binary names its libraries: \(binary.path)")
            for library in needed {
                #expect(
                    !Self.forbiddenLibraries.contains { library.hasPrefix($0) },
                    "\(binary.lastPathComponent) needs \(library)")
            }
            let symbols = elf.symbolNames()
            #expect(symbols.count > 100, "the test build keeps its symbol table")
            for name in Self.forbiddenSymbols {
                #expect(!symbols.contains { $0.contains(name) }, "\(binary.lastPathComponent) contains \(name)")
            }
        #endif
    }

    /// The check itself: an ELF file that does name Foundation and ICU is caught (the test
    /// bundle, which imports Foundation, stands in for a binary that links it).
    @Test func check_catchesABinaryThatLinksFoundation() throws {
        #if os(Linux)
            let me = try ELFFile(Array(Data(contentsOf: URL(fileURLWithPath: "/proc/self/exe"))))
            #expect(me.neededLibraries().contains { $0.hasPrefix("libFoundation.so") })
        #endif
    }
}

/// Just enough of ELF64 (little-endian) to list DT_NEEDED entries and symbol names.
struct ELFFile {
    struct Section { let type: UInt32; let offset: Int; let size: Int; let link: Int; let entrySize: Int }
    let bytes: [UInt8]
    let sections: [Section]

    struct NotELF: Error {}

    init(_ bytes: [UInt8]) throws {
        guard bytes.count > 64, bytes[0..<4].elementsEqual([0x7F, 0x45, 0x4C, 0x46]), bytes[4] == 2, bytes[5] == 1
        else { throw NotELF() }
        self.bytes = bytes
        func u(_ at: Int, _ n: Int) -> Int { (0..<n).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        let shoff = u(0x28, 8), shentsize = u(0x3A, 2), shnum = u(0x3C, 2)
        sections = (0..<shnum).map { i in
            let h = shoff + i * shentsize
            return Section(
                type: UInt32(u(h + 4, 4)), offset: u(h + 0x18, 8), size: u(h + 0x20, 8), link: u(h + 0x28, 4),
                entrySize: u(h + 0x38, 8))
        }
    }

    var isStatic: Bool { !sections.contains { $0.type == 6 } }  // no SHT_DYNAMIC

    private func u(_ at: Int, _ n: Int) -> Int { (0..<n).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }

    private func string(_ table: Section, _ index: Int) -> String {
        var end = table.offset + index
        while end < bytes.count && bytes[end] != 0 { end += 1 }
        return String(decoding: bytes[(table.offset + index)..<end], as: UTF8.self)
    }

    func neededLibraries() -> [String] {
        var out: [String] = []
        for dynamic in sections where dynamic.type == 6 {  // SHT_DYNAMIC
            let strings = sections[dynamic.link]
            // DT_NEEDED
            for e in stride(from: dynamic.offset, to: dynamic.offset + dynamic.size, by: 16) where u(e, 8) == 1 {
                out.append(string(strings, u(e + 8, 8)))
            }
        }
        return out
    }

    func symbolNames() -> [String] {
        var out: [String] = []
        for table in sections where table.type == 2 || table.type == 11 {  // SHT_SYMTAB, SHT_DYNSYM
            let strings = sections[table.link]
            for e in stride(from: table.offset, to: table.offset + table.size, by: max(24, table.entrySize)) {
                out.append(string(strings, u(e, 4)))
            }
        }
        return out
    }
}
