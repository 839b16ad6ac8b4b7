import Foundation
import Testing

@testable import latchkey

/// `generate --words N`: passphrases from Latchkey's own word list (issue 31, part 2), and
/// `generate --in-place`, which rotates the secret of an existing item through an update.
@Suite struct PassphraseTests {
    // MARK: The word list

    @Test func wordList_has2048DistinctShortLowercaseWords() {
        let words = WordList.words.map(String.init)
        #expect(words.count == 2048)
        #expect(Set(words).count == words.count, "no word repeats")
        #expect(words == words.sorted(), "kept in alphabetical order, so a repeat is easy to see")
        for word in words {
            #expect((3...8).contains(word.utf8.count), "\(word): 3 to 8 letters")
            #expect(word.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }, "\(word): a-z only")
        }
        // One spelling per spoken word: no word is another one plus "s" or "es".
        let set = Set(words)
        for word in words {
            #expect(!set.contains(word + "s") && !set.contains(word + "es"), "\(word) and its plural")
        }
        // The bits per word stated in the help are log2 of the list's size.
        #expect(1 << WordList.bitsPerWord == words.count)
    }

    @Test func help_statesTheListsSizeAndBitsPerWord() throws {
        let help = try CLISandbox().run(["generate", "--help"], env: ["COLUMNS": "200"]).out
        #expect(
            help.contains("list of \(WordList.words.count) (\(WordList.bitsPerWord) bits each)"), "\(help)")
        #expect(help.contains("--in-place") && help.contains("--clip"))
        let all = try CLISandbox().run(["generate", "--help-all"], env: ["COLUMNS": "200"]).out
        #expect(all.contains("--separator"))
    }

    @Test func uniformIndices_coverEveryValueOfABoundThatIsNoPowerOfTwo() throws {
        // 3 does not divide 65536: pairs at or above 65535 are dropped, the rest spread evenly.
        let draws = try GenerateCommand.uniformIndices(30_000, below: 3)
        #expect(draws.count == 30_000 && draws.allSatisfy { (0..<3).contains($0) })
        for value in 0..<3 {
            #expect((9_000...11_000).contains(draws.filter { $0 == value }.count), "value \(value)")
        }
        #expect(try GenerateCommand.uniformIndices(5, below: 1) == [0, 0, 0, 0, 0])
    }

    // MARK: The command

    @Test func words_storeAPassphraseOfListedWords_withTheSeparator() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let words = Set(WordList.words.map(String.init))
        let printed = try sb.run(["generate", "--service", "ci", "--account", "a", "--words", "6", "--print"])
        #expect(printed.status == 0, "\(printed.stderr)")
        let parts = printed.out.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        #expect(parts.count == 6 && parts.allSatisfy(words.contains), "\(printed.out)")
        #expect(try sb.run(["find", "--service", "ci", "--account", "a"]).out == printed.out)

        let spaced = try sb.run([
            "generate", "--service", "ci", "--account", "b", "--words", "3", "--separator", " ", "--print"
        ])
        let spacedParts = spaced.out.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        #expect(spacedParts.count == 3 && spacedParts.allSatisfy(words.contains), "\(spaced.out)")

        // 200 draws of 64 words: every draw is from the list, and they do not repeat one
        // another (12,800 words from 2048: a broken draw would stick to a few).
        let many = try sb.run(["generate", "--service", "ci", "--account", "c", "--words", "64", "--print"])
        let drawn = many.out.split(separator: "-").map(String.init)
        #expect(drawn.count == 64 && Set(drawn).count > 50, "\(many.out)")

        for bad in [
            ["--words", "2"], ["--words", "65"], ["--words", "6", "--length", "30"],
            ["--words", "6", "--charset", "hex"], ["--separator", "+"], ["--words", "6", "--separator", ""],
            ["--print", "--clip"]
        ] {
            let r = try sb.run(["generate", "--service", "ci", "--account", "z"] + bad)
            #expect(r.status == 2, "\(bad): \(r.stderr)")
        }
        #expect(try sb.run(["find", "--service", "ci", "--account", "z"]).status == 1, "nothing stored")
    }

    @Test func inPlace_replacesTheSecretOfTheOneMatch_throughAnUpdate() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        #expect(
            try sb.run(["add", "--service", "mail", "--account", "alice", "--label", "Mail"], stdin: Array("old".utf8))
                .status == 0)
        let before = try sb.run(["find", "--service", "mail", "--account", "alice", "--return", "attributes"])
        let created = try #require(try before.json() as? [String: Any])

        // Without --in-place an existing item is a duplicate, as for add.
        let duplicate = try sb.run(["generate", "--service", "mail", "--account", "alice"])
        #expect(duplicate.status == 3, "\(duplicate.stderr)")

        let rotated = try sb.run(["generate", "--service", "mail", "--account", "alice", "--in-place", "--print"])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        #expect(rotated.out.count == 24 && rotated.out != "old")
        let after = try sb.run(["find", "--service", "mail", "--account", "alice", "--return", "all"])
        let item = try #require(try after.json() as? [String: Any])
        #expect(item["v_Data"] as? String == Data(rotated.out.utf8).base64EncodedString())
        // An update: the same item (creation date, label kept), its modification date moved.
        #expect(item["cdat"] as? String == created["cdat"] as? String)
        #expect(item["labl"] as? String == "Mail")
        #expect(item["mdat"] as? String != nil && item["mdat"] as? String != created["mdat"] as? String)
        #expect(try sb.run(["dump", "--jsonl"]).out.split(separator: "\n").count == 1, "no second item")

        // No match: nothing is added; several matches: nothing is changed.
        let none = try sb.run(["generate", "--service", "other", "--account", "alice", "--in-place"])
        #expect(none.status == 1 && none.stderr.contains("--in-place"), "\(none.stderr)")
        #expect(try sb.run(["find", "--service", "other", "--account", "alice"]).status == 1)
        #expect(try sb.run(["add", "--service", "mail", "--account", "bob"], stdin: Array("b".utf8)).status == 0)
        let several = try sb.run(["generate", "--service", "mail", "--in-place"])
        #expect(several.status == 2, "\(several.stderr)")
        #expect(try sb.run(["find", "--service", "mail", "--account", "bob"]).out == "b")

        // A passphrase in place, on an internet password.
        #expect(
            try sb.run(["add", "--class", "inet", "--server", "db", "--account", "app"], stdin: Array("x".utf8)).status
                == 0)
        let phrase = try sb.run([
            "generate", "--class", "inet", "--server", "db", "--account", "app", "--in-place", "--words", "4", "--print"
        ])
        #expect(phrase.status == 0 && phrase.out.split(separator: "-").count == 4, "\(phrase.stderr)")
        #expect(try sb.run(["find", "--class", "inet", "--server", "db", "--account", "app"]).out == phrase.out)
    }
}
