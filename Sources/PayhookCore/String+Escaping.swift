extension String {
    /// Appends `text`, with each Unicode scalar that `escape` has a replacement for written as
    /// that replacement and every other scalar copied.
    ///
    /// The one loop behind payhook's hand-written escaping: JSON string literals
    /// (``JSONString/quote(_:)``) and the console's HTML text each supply only their table.
    /// Inlinable, so each caller's table is specialized into the loop rather than called
    /// through a closure for every scalar.
    @inlinable
    package mutating func append(_ text: String, escaping escape: (Unicode.Scalar) -> String?) {
        for scalar in text.unicodeScalars {
            if let replacement = escape(scalar) {
                self += replacement
            } else {
                unicodeScalars.append(scalar)
            }
        }
    }
}
