extension Manifest {
    /// Why this manifest cannot say which bytes of a part file are saved, or nil when it can: its
    /// bitmap vouches only for the file it was written to. `identity` and `size` are those of the
    /// part as it is open for reading now.
    ///
    /// A part of another size, or another file (copied, moved to another disk, replaced), is not
    /// taken at the manifest's word: only reading every block against its tag could tell, which a
    /// resume does and a look at the part does not. A version 1 manifest names no file and is
    /// believed, as a resume believes it once.
    package func reasonNotToTrust(part identity: PartIdentity, size: Int64) -> String? {
        if size != length { return "the part is \(size) bytes and the manifest says \(length)" }
        if let part, part != identity { return "the manifest was written for another file (the part was copied or replaced)" }
        return nil
    }
}
