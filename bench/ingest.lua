-- wrk script for bench/ingest: replays pre-signed requests written by payhook-ingest-load
-- (--write-requests). Each wrk thread takes every Nth request, so threads never send the same
-- delivery twice until the file is exhausted (then it wraps and payhook answers duplicates).
local requests = {}
local position = 0
local threads = 0

function setup(thread)
    thread:set("thread_index", threads)
    threads = threads + 1
    thread:set("thread_count", 0) -- filled in below, once all threads exist
end

function init(args)
    local path = args[1]
    local stride = tonumber(args[2])
    local file = assert(io.open(path, "rb"))
    local data = file:read("*a")
    file:close()
    local offset, n = 1, 0
    while offset <= #data do
        local newline = data:find("\n", offset, true)
        local length = tonumber(data:sub(offset, newline - 1))
        if n % stride == thread_index then
            requests[#requests + 1] = data:sub(newline + 1, newline + length)
        end
        n = n + 1
        offset = newline + 1 + length
    end
end

function request()
    position = position % #requests + 1
    return requests[position]
end
