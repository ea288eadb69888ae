import Testing
@testable import PayhookCrypto

@Suite("Constant-time comparison and random bytes")
struct ConstantTimeTests {
    @Test("equal bytes compare equal")
    func equal() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(ConstantTime.equals([], []))
    }

    @Test("any differing byte makes them unequal", arguments: 0..<4)
    func differs(_ position: Int) {
        var other: [UInt8] = [9, 9, 9, 9]
        other[position] ^= 0x01
        #expect(!ConstantTime.equals([9, 9, 9, 9], other))
    }

    @Test("different lengths are unequal, including prefixes and empty")
    func lengthMismatch() {
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.equals([1, 2], [1, 2, 3]))
        #expect(!ConstantTime.equals([], [0]))
    }

    @Test("secure random returns the requested count and varies")
    func random() {
        #expect(SecureRandom.bytes(0).isEmpty)
        let a = SecureRandom.bytes(32), b = SecureRandom.bytes(32)
        #expect(a.count == 32)
        #expect(a != b)
    }
}
