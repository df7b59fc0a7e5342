import Foundation

extension Dictionary where Key == String, Value == Any {
    /// The object with optionals that are nil turned into JSON null, for `JSONSerialization`.
    package var compactNulls: [String: Any] {
        mapValues { value in
            if case Optional<Any>.none = value as Any? { return NSNull() }
            return value
        }
    }
}
