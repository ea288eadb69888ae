-- wrk script for bench/ingest: replays pre-signed requests written by payhook-ingest-load
-- (--write-requests). Arguments: FILE STRIDE [PART PARTS]. Each wrk thread takes every STRIDEth
-- request, then only the PARTth of PARTS equal shares of those (one share per bench round), so
-- neither threads nor rounds send the same delivery twice until a share is exhausted (then it
-- wraps and payhook answers duplicates).
local requests = {}
local position = 0
local threads = 0

function setup(thread)
    thread:set("thread_index", threads)
    threads = threads + 1
end

function init(args)
    local path = args[1]
    local stride = tonumber(args[2])
    local part, parts = tonumber(args[3] or "1"), tonumber(args[4] or "1")
    local file = assert(io.open(path, "rb"))
    -- Lengths first (a seek past each request), so that only this thread's share is read:
    -- reading the whole file into one string left each thread holding all of it as garbage,
    -- and took 8 - 9 s instead of 4 - 5 for a 600 MB file (2026-11-30).
    local mine = {}
    local n = 0
    while true do
        local line = file:read("l")
        if not line then break end
        local length = tonumber(line)
        if n % stride == thread_index then
            mine[#mine + 1] = { file:seek(), length }
        end
        file:seek("cur", length)
        n = n + 1
    end
    local first = math.floor((part - 1) * #mine / parts) + 1
    local last = math.floor(part * #mine / parts)
    for i = first, last do
        file:seek("set", mine[i][1])
        requests[#requests + 1] = file:read(mine[i][2])
    end
    file:close()
    mine = nil
    collectgarbage("collect")
end

function request()
    position = position % #requests + 1
    return requests[position]
end
