/// Bytes saved in a block that is not complete yet, with the `BlockTag` of their sampled bytes
/// (`BlockTag.sampled`): the synced prefix of a segment still being fetched, or what a segment that
/// stopped mid-block left.
///
/// A manifest records them so that a kill loses only what arrived since the last checkpoint, not
/// also the partly written block of every connection (up to a block each: 2 MiB over 32 connections
/// with 64 KiB blocks).
package struct PartialBlock: Equatable, Hashable, Sendable {
    /// Within one block, never empty.
    package var range: Range<Int64>
    package var tag: UInt32

    package init(range: Range<Int64>, tag: UInt32) {
        self.range = range
        self.tag = tag
    }
}
