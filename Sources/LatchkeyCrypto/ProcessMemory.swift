import CLatchkeyCrypto

/// How the process's allocator hands memory back, for commands that build large tables.
package enum ProcessMemory {
    /// Makes glibc's malloc serve every block of 256 KiB or more with its own mapping, given
    /// back to the system when freed. By default the threshold rises to the size of each large
    /// block freed (up to 32 MiB), after which growing tables (an import's item table,
    /// attribute hashes and unique keys seen) are carved from the heap and the old copies of
    /// each stay resident: at 1,000,000 items about 35 MiB of an import's peak. Elsewhere (no
    /// glibc) it does nothing.
    package static func returnLargeBlocksToTheSystem() {
        _ = lk_malloc_map_blocks_from(256 << 10)
    }
}
