// What a user of `import VFetch` needs beside `Download`: the engine's options, events, results and
// errors. The engine's own machinery (files, libcurl, the cache directory) stays out of sight.
@_exported import enum VFetchEngine.Destination
@_exported import enum VFetchEngine.DownloadError
@_exported import enum VFetchEngine.DownloadEvent
@_exported import struct VFetchEngine.DownloadOptions
@_exported import struct VFetchEngine.DownloadProgress
@_exported import struct VFetchEngine.DownloadSummary
@_exported import enum VFetchEngine.Prefetch
@_exported import struct VFetchEngine.RemoteInfo
@_exported import struct VFetchEngine.SourceBytes
@_exported import struct VFetchEngine.StreamCatalogInfo
@_exported import struct VFetchEngine.StreamProgress
@_exported import struct VFetchEngine.StreamSummary
@_exported import enum VFetchEngine.Version
@_exported import struct VFetchMedia.MediaInfo
@_exported import struct VFetchMedia.MediaReport
@_exported import struct VFetchMedia.MediaStream
