-- mpv script for Benchmarks/playback.sh: marks what the benchmark measures in
-- mpv's log (--log-file), whose timestamps count from mpv's start.
-- playback_mpv.py reads them back.  Options (--script-opts):
--   pb-mode=play   play at real speed; quit at the end or after pb-cap s
--   pb-mode=seek   after the first frame, seek to each of pb-seeks
--                  (colon-separated seconds) in turn, each once the frame
--                  of the previous one is shown or pb-seek-cap s have
--                  passed ("pb seek-cap"); then quit
-- mpv logs "first video frame after restart shown" itself after the start
-- and after each seek; this script adds "pb" lines: seek targets, the media
-- time every 0.25 s, paused-for-cache changes and the end.
local mode = mp.get_opt("pb-mode") or "play"
local cap = tonumber(mp.get_opt("pb-cap") or "60")
local seek_cap = tonumber(mp.get_opt("pb-seek-cap") or "15")
local seeks = {}
for s in string.gmatch(mp.get_opt("pb-seeks") or "", "[^:]+") do
    seeks[#seeks + 1] = tonumber(s)
end

local function mark(what)
    mp.msg.info("pb " .. what)
end

local next_seek = 1
local seek_timer = nil
local function seek_next()
    if seek_timer then
        seek_timer:kill()
    end
    if next_seek > #seeks then
        mark("done")
        mp.command("quit")
        return
    end
    mark(string.format("seek %g", seeks[next_seek]))
    mp.commandv("seek", tostring(seeks[next_seek]), "absolute+exact")
    next_seek = next_seek + 1
    seek_timer = mp.add_timeout(seek_cap, function()
        mark("seek-cap")
        seek_next()
    end)
end
mp.register_event("playback-restart", function()
    if mode == "seek" then
        seek_next()
    end
end)

if mode == "play" then
    mp.observe_property("paused-for-cache", "bool", function(_, paused)
        if paused ~= nil then
            mark("stall " .. tostring(paused))
        end
    end)
    mp.add_periodic_timer(0.25, function()
        local t = mp.get_property_number("playback-time")
        if t then
            mark(string.format("pos %.3f", t))
        end
    end)
end

mp.add_timeout(cap, function()
    mark("cap")
    mp.command("quit")
end)
mp.register_event("end-file", function(e)
    mark("end " .. tostring(e.reason) .. " " .. tostring(e.error or ""))
end)
