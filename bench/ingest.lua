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
    local part, parts = tonumber(args[3] or "1"), tonumber(args[4] or "1")
    local first = math.floor((part - 1) * #requests / parts) + 1
    local last = math.floor(part * #requests / parts)
    local share = {}
    for i = first, last do share[#share + 1] = requests[i] end
    requests = share
end

function request()
    position = position % #requests + 1
    return requests[position]
end
