// vfetch's crypto on a whole file, the way the downloads use it, for crypto-vs-openssl.sh:
//   CryptoFile sha256 FILE              prints the digest as `--checksum` computes it: 1 MiB reads
//                                       fed to SHA256 (Engine+Output's sha256(of:))
//   CryptoFile decrypt KEY IV FILE      decrypts FILE in place as StreamParts.seal does: 1 MiB steps
//                                       through one AES128CBC, the padding removed from the end

import Foundation
import VFetchCore

/// The reads of Engine+Output's sha256(of:) and the steps of StreamParts.seal, into a page-aligned buffer as theirs.
let step = 1 << 20

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("CryptoFile: \(message)\n".utf8))
    exit(2)
}

func bytes(fromHex text: String) -> [UInt8] {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { fail("odd hex: \(text)") }
    return stride(from: 0, to: digits.count, by: 2).map { index in
        guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
            fail("not hex: \(text)")
        }
        return byte
    }
}

/// Reads `count` bytes at `offset` into `buffer` (a short read only at the end of the file).
func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, count: Int, at offset: Int) -> Int {
    var filled = 0
    while filled < count {
        let read = pread(fd, buffer.baseAddress! + filled, count - filled, off_t(offset + filled))
        guard read >= 0 else { fail("read: \(String(cString: strerror(errno)))") }
        if read == 0 { break }
        filled += read
    }
    return filled
}

let arguments = CommandLine.arguments
let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: step, alignment: 4096)
switch (arguments.count, arguments.count > 1 ? arguments[1] : "") {
case (3, "sha256"):
    let fd = open(arguments[2], O_RDONLY)
    guard fd >= 0 else { fail("cannot open \(arguments[2])") }
    var hasher = SHA256()
    var offset = 0
    while case let count = read(fd, buffer, count: step, at: offset), count > 0 {
        hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        offset += count
    }
    print("\(hasher.finalize())  \(arguments[2])")
case (5, "decrypt"):
    let fd = open(arguments[4], O_RDWR)
    guard fd >= 0 else { fail("cannot open \(arguments[4])") }
    let length = Int(lseek(fd, 0, SEEK_END))
    guard var cipher = try? AES128CBC(key: bytes(fromHex: arguments[2]), iv: bytes(fromHex: arguments[3])) else {
        fail("bad key or IV")
    }
    var offset = 0
    var size = length
    while offset < length {
        let count = read(fd, buffer, count: min(step, length - offset), at: offset)
        do {
            let blocks = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
            try cipher.decryptInPlace(blocks)
            var plainCount = count
            if offset + count == length {
                plainCount -= try AES128CBC.paddingLength(UnsafeRawBufferPointer(blocks))
                size = offset + plainCount
            }
            guard pwrite(fd, blocks.baseAddress, plainCount, off_t(offset)) == plainCount else { fail("short write") }
        } catch {
            fail("\(error)")
        }
        offset += count
    }
    guard ftruncate(fd, off_t(size)) == 0 else { fail("cannot truncate") }
default:
    fail("usage: CryptoFile sha256 FILE | CryptoFile decrypt KEYHEX IVHEX FILE")
}
