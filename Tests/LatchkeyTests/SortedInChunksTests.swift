@testable import Latchkey
import Testing
import LatchkeyTestSupport

/// The index writer's chunked sort (SortedInChunks): whatever the chunk size and however the
/// keys are spread, it delivers exactly the sorted elements, and `peek` does not consume.
@Suite struct SortedInChunksTests {
    /// (hash, item) pairs as the attribute pages hold them: uniform hashes, one hash shared by
    /// a third of the items (a service every item has), and keys that share their top bits.
    static func entries(_ n: Int, seed: UInt64) -> [(UInt64, ID16)] {
        var r = SplitMix(seed: seed)  // LatchkeyTestSupport: seeded, so a failure repeats
        let shared = r.next()
        return (0..<n).map { i in
            let id = ID16(
                withUnsafeBytes(of: r.next().bigEndian, Array.init)
                    + withUnsafeBytes(of: r.next().bigEndian, Array.init))
            switch i % 3 {
            case 0: return (shared, id)
            case 1: return (r.next() & 0x00FF_FFFF_FFFF_FFFF, id)  // top byte 0: one partition
            default: return (r.next(), id)
            }
        }
    }

    @Test(arguments: [0, 1, 2, 17, 1000, 5000])
    func deliversTheSortedElements_forEveryChunkSize(count: Int) {
        let all = Self.entries(count, seed: UInt64(count) + 1)
        let expected = all.sorted { $0 < $1 }
        for chunk in [1, 3, 64, 1 << 18] {
            var s = SortedInChunks<(UInt64, ID16)>(
                chunk: chunk, produce: { body in all.forEach(body) }, key: { $0.0 }, less: { $0 < $1 })
            #expect(s.count == count)
            var out: [(UInt64, ID16)] = []
            while let e = s.peek() {
                let taken = s.next()
                #expect(taken.map { $0 == e } == true)
                out.append(e)
            }
            #expect(
                out.count == expected.count && zip(out, expected).allSatisfy { $0 == $1 },
                "chunk \(chunk), \(count) elements")
        }
    }

    @Test func sortInPlace_sortsRunsReversedAndShuffledInput() {
        var r = SplitMix(seed: 7)
        let inputs: [[UInt64]] = [
            (0..<1000).map { UInt64($0) }, (0..<1000).reversed().map { UInt64($0) }, (0..<1000).map { _ in r.next() },
            (0..<1000).map { $0 % 2 == 0 ? UInt64($0) : 5000 - UInt64($0) }, [42], []
        ]
        for input in inputs {
            var a = input
            a.withUnsafeMutableBufferPointer { SortedInChunks<UInt64>.sortInPlace($0, by: <) }
            #expect(a == input.sorted())
        }
    }
}
