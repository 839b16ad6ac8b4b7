// latchkey-fixtures: writes the deterministic keychain fixtures.
//
//     swift run latchkey-fixtures [ROOT]      (ROOT defaults to "fixtures")
//
// Deletes and rewrites ROOT/keychain/, ROOT/backup/ and ROOT/sync/, and writes ROOT/manifest.json (every
// fixture's operation and expected outcome, spec/CONFORMANCE.md); nothing else under ROOT is touched.
// See fixtures/keychain/README.md and fixtures/backup/README.md, which this program writes too.
import Foundation

let root = CommandLine.arguments.dropFirst().first ?? "fixtures"
if root == "-h" || root == "--help" {
    print(
        "usage: latchkey-fixtures [ROOT]   writes ROOT/keychain/, ROOT/backup/ and ROOT/manifest.json (default ROOT: fixtures)"
    )
    exit(0)
}
do {
    let fixtures = try FixtureCatalog.all()
    let dump = try goldenSmallHexDump(try FixtureCatalog.buildGoldenSmall())
    let target = URL(fileURLWithPath: root).appendingPathComponent("keychain")
    try FixtureWriter.writeAll(fixtures, hexDump: dump, to: target)
    print("wrote \(fixtures.count) fixtures to \(target.path)")
    let backups = try BackupFixtureCatalog.all()
    let backupTarget = URL(fileURLWithPath: root).appendingPathComponent("backup")
    let example = try BackupFixtureWriter.annotated(
        try BackupFixtureCatalog.golden("golden_password", password: BackupFixtureCatalog.password))
    try BackupFixtureWriter.writeAll(backups, example: example, to: backupTarget)
    print("wrote \(backups.count) fixtures to \(backupTarget.path)")
    let syncTarget = URL(fileURLWithPath: root).appendingPathComponent("sync")
    let sync = try SyncFixtures.write(to: syncTarget)
    print("wrote the sync fixtures to \(syncTarget.path)")
    try ManifestWriter.write(keychains: fixtures, backups: backups, sync: sync, to: URL(fileURLWithPath: root))
    print("wrote \(URL(fileURLWithPath: root).appendingPathComponent("manifest.json").path)")
} catch {
    FileHandle.standardError.write(Data("latchkey-fixtures: \(error)\n".utf8))
    exit(1)
}
