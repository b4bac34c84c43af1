-- Pass/fail bookkeeping for the headless test; writes a plain-text report.
--
-- Report format, one entry per line:
--   PASS <step>
--   FAIL <step>: <message>
--   INFO <label>: <text, continuation lines indented by 4 spaces>
--   RESULT: PASS | RESULT: FAIL

local M = {}

local path
local lines = {}
local failures = 0
local finished = false

local function indent(text)
  return (tostring(text):gsub('\n', '\n    '))
end

function M.init(out)
  path = out
end

function M.pass(name)
  table.insert(lines, 'PASS ' .. name)
end

function M.fail(name, msg)
  failures = failures + 1
  table.insert(lines, 'FAIL ' .. name .. ': ' .. indent(msg))
end

function M.info(label, text)
  table.insert(lines, 'INFO ' .. label .. ': ' .. indent(text))
end

function M.failed()
  return failures > 0
end

--- Run `fn` as a named step; an error inside it is a failure of that step.
function M.step(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    M.pass(name)
  else
    M.fail(name, err)
  end
  return ok
end

local function write()
  local text = table.concat(lines, '\n') .. '\nRESULT: ' .. (failures == 0 and 'PASS' or 'FAIL') .. '\n'
  if path and path ~= '' then
    local f = io.open(path, 'w')
    if f then
      f:write(text)
      f:close()
    end
  end
  io.stderr:write(text)
end

--- Write the report and quit Neovim with 0 (all passed) or 1.
function M.finish(force)
  if finished then
    return
  end
  finished = true
  write()
  local code = failures == 0 and 0 or 1
  local ok = pcall(vim.cmd, 'cquit ' .. code)
  if not ok or force then
    os.exit(code)
  end
end

return M
