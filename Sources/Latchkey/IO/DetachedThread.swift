#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Starts a detached pthread, in place of Foundation's Thread (FoundationEssentials has none).
package enum DetachedThread {
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread with a stack of `stackSize` bytes (nil: the
    /// system's default, as Thread's).
    /// - Returns: false when no thread could be created (then `body` does not run, as with
    ///   Foundation's Thread.start).
    @discardableResult
    package static func start(stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) -> Bool {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        #if canImport(Darwin)
            var thread: pthread_t?
        #else
            var thread = pthread_t()
        #endif
        let started = pthread_create(
            &thread, &attributes,
            { raw in
                #if canImport(Darwin)
                    let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
                #else
                    let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                #endif
                box.body()
                return nil
            }, context)
        if started != 0 { Unmanaged<Box>.fromOpaque(context).release() }
        return started == 0
    }
}
