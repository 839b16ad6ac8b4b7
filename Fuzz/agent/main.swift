// libFuzzer target: the agent protocol's message decoder (spec/AGENT.md §3–§5,
// Sources/Latchkey/Agent/AgentMessage.swift), which reads every frame a client sends the agent
// and every answer a client reads.
//
// Each input is a frame's payload (what follows the length prefix), decoded as a request and as
// an answer. The encoding is canonical, so a request that decodes must re-encode, in the
// input's version (2 or 3), to exactly the input; so must an answer, except an error whose
// status this Latchkey does not know (it becomes errSecInternal), which must re-encode to
// bytes that decode to themselves. Decoding
// must never allocate more than the input can hold (libFuzzer's -malloc_limit_mb catches that).
import Latchkey
import LatchkeyFormat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAgentMessage(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let payload = Array(UnsafeBufferPointer(start: data, count: size))
    var w = ByteWriter(capacity: 4)
    w.writeInteger(UInt32(truncatingIfNeeded: size), as: UInt32.self)
    let frame = w.bytes + payload

    let version = payload.first ?? 0
    if let request = try? AgentMessage.Request.decode(payload[...]) {
        precondition(request.encode(version: version) == frame, "a decoded request does not re-encode to its bytes")
        var copy = request
        copy.cleanse()
        precondition(copy.type == request.type, "cleansing changed the kind of request")
    }
    if let response = try? AgentMessage.Response.decode(payload[...]) {
        let again = response.encode(version: version)
        if case .error = response, again != frame {
            let status = ByteReader(payload).getInteger(at: 2, as: UInt32.self) ?? 0
            precondition(
                KeychainStatus(rawValue: Int32(bitPattern: status)) == nil, "a known error status did not round-trip")
        } else {
            precondition(again == frame, "a decoded answer does not re-encode to its bytes")
        }
        let third = try? AgentMessage.Response.decode(again[4...])
        precondition(third?.encode(version: version) == again, "a re-encoded answer does not decode to itself")
    }
    _ = try? AgentMessage.Request.decode(frame: frame)
    return 0
}
