// Static inline re-exports of libavformat/libavutil macros that Swift cannot import.
// Every symbol carries the `cav_` prefix; nothing else lives here.
#ifndef CAVFORMAT_SHIM_H
#define CAVFORMAT_SHIM_H

#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>

/// `AVERROR(e)`: a POSIX errno as a libav error code.
static inline int cav_averror(int e) { return AVERROR(e); }
/// `AVERROR_EOF`.
static inline int cav_error_eof(void) { return AVERROR_EOF; }
/// `AVERROR_EXIT`: "immediate exit was requested".
static inline int cav_error_exit(void) { return AVERROR_EXIT; }
/// `AVERROR_INVALIDDATA`.
static inline int cav_error_invaliddata(void) { return AVERROR_INVALIDDATA; }
/// `AV_NOPTS_VALUE`: an undefined timestamp.
static inline int64_t cav_nopts_value(void) { return AV_NOPTS_VALUE; }

#endif
