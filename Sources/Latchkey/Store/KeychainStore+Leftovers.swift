/// What killed work leaves beside a keychain, and its removal (spec/FORMAT.md §11.1, §11.5,
/// §17.1; spec/BACKUP.md §9.3). Every name is matched exactly (`isTemporaryName`): the
/// keychain's name, the operation's infix and 8 lowercase hex digits.
extension WriteTransaction {
    /// Once per handle, as the first write transaction begins: removes the temporary files of
    /// compactions and index writes that died before their rename (only a writer holding the
    /// lock makes them, so none is live now), and what `removeAbandonedCreations` removes.
    func removeLeftoversOnce() {
        requireOpen()
        let store = self.store
        guard !store.leftoversRemoved else { return }
        store.leftoversRemoved = true
        removeAbandonedCompactions()
        store.removeAbandonedIndexWrites(holding: lock)
        KeychainStore.removeAbandonedCreations(besides: store.path, fs: store.fs) { candidate in
            guard
                case .success = IndexBase.load(
                    indexPath: candidate, fs: store.fs, logFD: store.fd, logHeader: store.header,
                    logHeaderSize: store.headerSize, keys: store.keys)
            else { return false }
            return true
        }
    }
}

extension KeychainStore {

    /// Removes the names that an `init` or a restore into a new keychain at `path` left when
    /// it died; call once a keychain is at `path` (every such operation still running then
    /// fails anyway: it refuses to replace the keychain).
    ///
    /// - `<path>.create-<hex>`: the new file of an `init` killed before its rename (a header
    ///   nobody uses), or, when the rename fell back to link and unlink (a file system without
    ///   RENAME_NOREPLACE), a second name of the keychain itself, which a later compaction or
    ///   passcode change would leave holding the old file and its old keybag.
    /// - `<path>.restore-<hex>`: the temporary keychain of a restore killed before its rename
    ///   (with its index, its temporary files and those of its own creation), or, as above, a
    ///   second name of the keychain. The index of a restore killed after the keychain reached
    ///   `path` but before the index followed is moved beside the keychain when it has none
    ///   and `adoptIndex` finds it valid for the keychain (§17.5); any other is removed.
    ///
    /// The device state of an abandoned temporary keychain stays (88 bytes): a state file names
    /// its keychain by file UUID only, and removing one on the word of a file that anyone who
    /// can write this directory could plant (a copy of another keychain of this device) would
    /// let them switch off that keychain's rollback detection. Best effort.
    package static func removeAbandonedCreations(
        besides path: String, fs: FileSystem, adoptIndex: (String) -> Bool = { _ in false }
    ) {
        let directory = directoryOf(path)
        let base = lastPathComponent(path)
        func full(_ name: String) -> String {
            path.contains("/") ? (directory == "/" ? "/" : directory + "/") + name : name
        }
        let names = fs.list(directory)
        for name in names where isTemporaryName(name, prefix: base + ".create-") {
            try? fs.remove(full(name))
        }
        // The temporary keychains of restores: `<path>.restore-<hex>` and the names made
        // beside it (`.index`, `.index-<hex>`, `.create-<hex>`), whichever of them are left.
        let restorePrefix = base + ".restore-"
        var stems = Set<String>()
        for name in names where name.utf8.starts(with: restorePrefix.utf8) {
            let stem = String(decoding: name.utf8.prefix(restorePrefix.utf8.count + 8), as: UTF8.self)
            guard isTemporaryName(stem, prefix: restorePrefix) else { continue }
            let rest = String(decoding: name.utf8.dropFirst(stem.utf8.count), as: UTF8.self)
            if rest.isEmpty || rest == ".index" || isTemporaryName(rest, prefix: ".index-")
                || isTemporaryName(rest, prefix: ".create-")
            {
                stems.insert(stem)
            }
        }
        guard !stems.isEmpty else { return }
        let live = try? fs.identity(path: path)
        let liveIndex = IndexBase.path(of: path)
        for stem in stems.sorted() {
            let temp = full(stem)
            let tempIdentity = try? fs.identity(path: temp)
            for name in names
            where isTemporaryName(name, prefix: stem + ".index-") || isTemporaryName(name, prefix: stem + ".create-") {
                try? fs.remove(full(name))
            }
            let tempIndex = IndexBase.path(of: temp)
            if (try? fs.ownership(path: tempIndex)) != nil {
                let reachedPath = live != nil && (tempIdentity == nil || tempIdentity == live)
                if reachedPath, (try? fs.ownership(path: liveIndex)) == nil,
                    (try? fs.ownership(path: tempIndex))?.kind == .regular,
                    adoptIndex(tempIndex)
                {
                    if (try? fs.rename(tempIndex, liveIndex)) == nil { try? fs.remove(tempIndex) }
                } else {
                    try? fs.remove(tempIndex)
                }
            }
            if tempIdentity != nil { try? fs.remove(temp) }
        }
    }
}
