/// What `latchkey --version` prints: the release (semantic versioning; CHANGELOG.md's newest
/// version heading has the same number, which DocumentationTests check) and, when built from a
/// git work tree, the commit (`BuildInfo`, generated before every build by
/// Plugins/LatchkeyBuildInfo): `0.5.0 (commit 1a2b3c4d5e6f)`, or `0.5.0` from a tarball.
enum Version {
    /// The release. Raise it together with CHANGELOG.md's heading; the release is tagged
    /// `v<release>`.
    static let release = "0.6.0"

    static var description: String {
        BuildInfo.commit.map { "\(release) (commit \($0))" } ?? release
    }
}
