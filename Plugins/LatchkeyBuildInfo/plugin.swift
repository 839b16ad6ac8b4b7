import Foundation
import PackagePlugin

/// Writes `BuildInfo.swift` for the `latchkey` executable before every build: the git commit
/// the package was built from, when the package directory is the top of a git work tree, else
/// none (a tarball, a copy without .git). `latchkey --version` prints it after the release.
///
/// The work is done by scripts/build-info.sh through /bin/sh, a prebuild command, so that the
/// lookup runs on every build (a build command would run only when its inputs change) and needs
/// no compiled tool. The script rewrites the file only when its content changes, so an
/// unchanged commit recompiles nothing. No build setting is involved: SwiftPM refuses
/// `unsafeFlags` in a package used as a dependency by version.
@main
struct LatchkeyBuildInfo: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildInfo")
        let package = context.package.directoryURL
        return [
            .prebuildCommand(
                displayName: "Recording the git commit of this build of \(target.name)",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [package.appending(path: "scripts/build-info.sh").path, package.path, output.path],
                outputFilesDirectory: output
            )
        ]
    }
}
