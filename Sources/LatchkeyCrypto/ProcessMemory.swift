import CLatchkeyCrypto

/// How the process's allocator hands memory back, for commands that build large tables.
package enum ProcessMemory {
    /// Makes glibc's malloc serve every block of 256 KiB or more with its own mapping, given
    /// back to the system when freed. By default the threshold rises to the size of each large
    /// block freed (up to 32 MiB), after which growing tables (an import's item table,
    /// attribute hashes and unique keys seen) are carved from the heap and the old copies of
    /// each stay resident, a large part of an import's peak (docs/RESULTS.md, "Figures behind
    /// the code"). Elsewhere (no glibc) it does nothing.
    package static func returnLargeBlocksToTheSystem() {
        _ = lk_malloc_map_blocks_from(256 << 10)
    }
}

/// Int32 cells that threads and a signal handler may read and write at once: lock-free
/// atomic loads and stores (async-signal-safe), in memory allocated once and never freed (a
/// handler may run at any time, so what it reads must outlive every thread). Make them before
/// the handler is installed: a handler must not run an initializer.
package struct SignalSafeInt32: @unchecked Sendable {
    private let cells: UnsafeMutablePointer<Int32>
    package let count: Int

    package init(count: Int = 1) {
        precondition(count > 0)
        self.count = count
        cells = .allocate(capacity: count)
        cells.initialize(repeating: 0, count: count)
    }

    package func load(_ index: Int = 0) -> Int32 {
        precondition(index >= 0 && index < count)
        return lk_atomic_load_i32(cells + index)
    }

    package func store(_ value: Int32, at index: Int = 0) {
        precondition(index >= 0 && index < count)
        lk_atomic_store_i32(cells + index, value)
    }
}
