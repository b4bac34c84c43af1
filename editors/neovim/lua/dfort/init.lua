-- dfort.nvim: Neovim client for `dfort lsp` (automatic differentiation of
-- Fortran). Works from Neovim 0.7 to 0.11: every API that appeared after 0.7
-- is looked up before it is used.
--
--   require('dfort').setup{
--     cmd = { 'dfort', 'lsp' },
--     settings = { inlayHints = { active = true }, roots = { ... } },
--     filetypes = { 'fortran' },
--     root_markers = { 'dfort.toml', '.git' },
--     inlay_hints = true,
--     folding = true,
--   }

local M = {}

local api = vim.api
local uv = vim.uv or vim.loop

local NAME = 'dfort'

local defaults = {
  cmd = { 'dfort', 'lsp' },
  settings = {},
  filetypes = { 'fortran' },
  root_markers = { 'dfort.toml', '.git' },
  inlay_hints = true,
  -- Fold with the server's folding ranges (units, loops, IF arms, comment
  -- blocks, `#if` arms) where Neovim has `vim.lsp.foldexpr` (0.11 and later):
  -- sets 'foldmethod' and 'foldexpr' of the windows showing a Fortran buffer.
  folding = true,
  -- false: only define the commands (for a client configured elsewhere, e.g.
  -- through nvim-lspconfig or vim.lsp.config, under the name 'dfort').
  autostart = true,
  -- Optional extras, passed through to the client configuration.
  on_attach = nil,
  capabilities = nil,
  cmd_env = nil,
  -- Milliseconds a synchronous request (code action, command) may take.
  timeout = 10000,
  -- `dfort.verify` compiles and runs a check, so it gets longer.
  verify_timeout = 120000,
}

M.config = nil

local state = {
  -- 0.7 only: root directory -> client id.
  clients_by_root = {},
}

-- Feature checks -----------------------------------------------------------

local function has(version)
  return vim.fn.has('nvim-' .. version) == 1
end

local function has_config_api()
  return vim.lsp.config ~= nil and type(vim.lsp.enable) == 'function'
end

local function notify(msg, level)
  vim.notify('dfort: ' .. msg, level or vim.log.levels.INFO)
end

-- Client methods are called with `:` from 0.11 on and with `.` before.
local function client_call(client, method, ...)
  if has('0.11') then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function empty_dict_if_empty(t)
  if type(t) ~= 'table' or next(t) == nil then
    return vim.empty_dict()
  end
  return t
end

-- Paths and roots ------------------------------------------------------------

local function exists(path)
  return uv.fs_stat(path) ~= nil
end

--- Nearest directory above `fname` holding one of `markers`, else the
--- file's own directory.
function M.find_root(fname, markers)
  markers = markers or (M.config and M.config.root_markers) or defaults.root_markers
  local dir = vim.fn.fnamemodify(fname, ':p:h')
  local cur = dir
  while cur and cur ~= '' do
    for _, marker in ipairs(markers) do
      local sep = cur:sub(-1) == '/' and '' or '/'
      if exists(cur .. sep .. marker) then
        return cur
      end
    end
    local parent = vim.fn.fnamemodify(cur, ':h')
    if parent == cur then
      break
    end
    cur = parent
  end
  return dir
end

local function buf_file(bufnr)
  if not api.nvim_buf_is_valid(bufnr) then
    return nil
  end
  if api.nvim_buf_get_option(bufnr, 'buftype') ~= '' then
    return nil
  end
  local name = api.nvim_buf_get_name(bufnr)
  if name == '' then
    return nil
  end
  return name
end

local function same_file(a, b)
  if not a or not b then
    return false
  end
  local ra = uv.fs_realpath(a) or vim.fn.fnamemodify(a, ':p')
  local rb = uv.fs_realpath(b) or vim.fn.fnamemodify(b, ':p')
  return ra == rb
end

local function filetype_matches(bufnr)
  local ft = api.nvim_buf_get_option(bufnr, 'filetype')
  for _, want in ipairs(M.config.filetypes) do
    if ft == want then
      return true
    end
  end
  return false
end

-- Clients -------------------------------------------------------------------

--- dfort clients attached to `bufnr` (initialized or not); all dfort clients
--- when `bufnr` is nil.
function M.clients(bufnr)
  local out = {}
  if bufnr == 0 then
    bufnr = api.nvim_get_current_buf()
  end
  if vim.lsp.get_clients then -- 0.10+
    local filter = { name = NAME, _uninitialized = true }
    filter.bufnr = bufnr
    out = vim.lsp.get_clients(filter)
  elseif bufnr and vim.lsp.buf_get_clients then -- 0.7 - 0.9
    for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if client.name == NAME then
        table.insert(out, client)
      end
    end
  else
    for _, client in pairs(vim.lsp.get_active_clients()) do
      if client.name == NAME then
        table.insert(out, client)
      end
    end
  end
  return out
end

local function is_stopped(client)
  local ok, stopped = pcall(client_call, client, 'is_stopped')
  return ok and stopped
end

--- The initialized dfort client of `bufnr`, waiting up to `timeout` ms for
--- it to appear and finish the handshake.
function M.client(bufnr, timeout)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  timeout = timeout or (M.config and M.config.timeout) or defaults.timeout
  local found
  vim.wait(timeout, function()
    for _, client in ipairs(M.clients(bufnr)) do
      if client.initialized and not is_stopped(client) then
        found = client
        return true
      end
    end
    return false
  end, 20)
  if not found then
    return nil, 'no initialized dfort client for buffer ' .. bufnr
  end
  return found
end

local function enable_inlay_hints(client, bufnr)
  if not M.config.inlay_hints or vim.lsp.inlay_hint == nil then
    return
  end
  local caps = client.server_capabilities or {}
  if not caps.inlayHintProvider then
    return
  end
  local ih = vim.lsp.inlay_hint
  if type(ih) == 'table' and type(ih.enable) == 'function' then
    -- 0.10 final and later: enable(enable, filter); early 0.10: enable(bufnr, enable).
    if not pcall(ih.enable, true, { bufnr = bufnr }) then
      pcall(ih.enable, bufnr, true)
    end
  elseif type(ih) == 'function' then
    pcall(ih, bufnr, true)
  end
end

--- Folds from the server's folding ranges in every window showing `bufnr`
--- (now and when it is shown again). Folds start open unless the user set
--- 'foldlevelstart'.
local function enable_folding(client, bufnr)
  local caps = client.server_capabilities or {}
  if M.config.folding == false or not caps.foldingRangeProvider then
    return
  end
  if not (vim.lsp and type(vim.lsp.foldexpr) == 'function') then
    return
  end
  local function set(win)
    vim.wo[win].foldmethod = 'expr'
    vim.wo[win].foldexpr = 'v:lua.vim.lsp.foldexpr()'
    if vim.o.foldlevelstart < 0 then
      vim.wo[win].foldlevel = 99
    end
  end
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    set(win)
  end
  api.nvim_create_autocmd('BufWinEnter', {
    buffer = bufnr,
    group = api.nvim_create_augroup('dfort_folding_' .. bufnr, { clear = true }),
    callback = function()
      set(api.nvim_get_current_win())
    end,
  })
end

--- Semantic tokens (Neovim 0.9 and later): the modifiers dfort's analyses
--- set, drawn unless the user or colour scheme styles them.
local function define_token_highlights()
  pcall(api.nvim_set_hl, 0, '@lsp.mod.active', { bold = true, default = true })
  pcall(api.nvim_set_hl, 0, '@lsp.mod.recorded', { underline = true, default = true })
end

--- Code lenses above each procedure (adjoint · tangent · verify, and what
--- its adjoint does), refreshed when the buffer is entered, left from
--- insert mode or written; `vim.lsp.codelens.run()` runs one.
local function enable_codelens(client, bufnr)
  local caps = client.server_capabilities or client.resolved_capabilities or {}
  if not (vim.lsp.codelens and caps.codeLensProvider) then
    return
  end
  local function refresh()
    if api.nvim_buf_is_loaded(bufnr) and api.nvim_get_current_buf() == bufnr then
      pcall(vim.lsp.codelens.refresh, { bufnr = bufnr })
    end
  end
  api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'BufWritePost' }, {
    buffer = bufnr,
    group = api.nvim_create_augroup('dfort_codelens_' .. bufnr, { clear = true }),
    callback = refresh,
  })
  refresh()
end

local function on_attach(client, bufnr)
  define_token_highlights()
  enable_codelens(client, bufnr)
  enable_inlay_hints(client, bufnr)
  -- Neovim 0.11 and later set it themselves; older ones need it for
  -- <C-x><C-o> to ask the server.
  if vim.bo[bufnr].omnifunc == '' then
    vim.bo[bufnr].omnifunc = 'v:lua.vim.lsp.omnifunc'
  end
  enable_folding(client, bufnr)
  if M.config.on_attach then
    M.config.on_attach(client, bufnr)
  end
end

local function on_init(client)
  -- 0.11 sends `settings` through workspace/didChangeConfiguration by itself;
  -- older versions may not, and a second copy does no harm.
  if not has('0.11') then
    pcall(client_call, client, 'notify', 'workspace/didChangeConfiguration', {
      settings = client.config.settings,
    })
  end
end

local show_document_handler -- defined below

-- Inactive `#if` regions ---------------------------------------------------

M.inactive_namespace = api.nvim_create_namespace('dfort_inactive')

--- The server publishes the lines an `#if` leaves out as hints with the
--- code `inactive-region` (tag `unnecessary`). They are drawn here with the
--- highlight group `DfortInactive` (linked to `Comment` unless the user
--- sets it) instead of as diagnostics: no sign, no virtual text.
local function publish_diagnostics_handler(err, result, ctx, config)
  if type(result) == 'table' and type(result.diagnostics) == 'table' then
    local kept, inactive = {}, {}
    for _, d in ipairs(result.diagnostics) do
      if d.code == 'inactive-region' then
        table.insert(inactive, d)
      else
        table.insert(kept, d)
      end
    end
    local ok, bufnr = pcall(vim.uri_to_bufnr, result.uri)
    if ok and api.nvim_buf_is_loaded(bufnr) then
      pcall(api.nvim_set_hl, 0, 'DfortInactive', { link = 'Comment', default = true })
      api.nvim_buf_clear_namespace(bufnr, M.inactive_namespace, 0, -1)
      local count = api.nvim_buf_line_count(bufnr)
      for _, d in ipairs(inactive) do
        local first = d.range.start.line
        local last = math.min(d.range['end'].line, count - 1)
        for line = first, last do
          local text = api.nvim_buf_get_lines(bufnr, line, line + 1, false)[1] or ''
          -- Above Tree-sitter's colours (priority 100).
          pcall(api.nvim_buf_set_extmark, bufnr, M.inactive_namespace, line, 0, {
            end_row = line,
            end_col = #text,
            hl_group = 'DfortInactive',
            priority = 200,
          })
        end
      end
    end
    result = vim.tbl_extend('force', result, { diagnostics = kept })
  end
  local default = (vim.lsp.diagnostic and vim.lsp.diagnostic.on_publish_diagnostics)
    or vim.lsp.handlers['textDocument/publishDiagnostics']
  return default(err, result, ctx, config)
end

local function base_config()
  local cfg = M.config
  local settings = vim.deepcopy(cfg.settings or {})
  return {
    name = NAME,
    cmd = cfg.cmd,
    cmd_env = cfg.cmd_env,
    init_options = empty_dict_if_empty(settings),
    settings = { dfort = empty_dict_if_empty(vim.deepcopy(settings)) },
    capabilities = cfg.capabilities,
    on_attach = on_attach,
    on_init = on_init,
    handlers = {
      ['window/showDocument'] = show_document_handler,
      ['textDocument/publishDiagnostics'] = publish_diagnostics_handler,
    },
  }
end

--- Start (or reuse) the dfort client for `bufnr` and attach it. Returns the
--- client id when known.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local fname = buf_file(bufnr)
  if not fname or not M.config then
    return nil
  end
  local root = M.find_root(fname)

  if vim.lsp.start then -- 0.8+
    local config
    if has_config_api() and vim.lsp.config[NAME] then
      config = vim.deepcopy(vim.lsp.config[NAME])
    else
      config = base_config()
    end
    config.name = NAME
    config.root_dir = root
    local ok, id = pcall(api.nvim_buf_call, bufnr, function()
      return vim.lsp.start(config, { bufnr = bufnr })
    end)
    if not ok then
      notify('could not start ' .. table.concat(M.config.cmd, ' ') .. ': ' .. tostring(id), vim.log.levels.ERROR)
      return nil
    end
    return id
  end

  -- 0.7: one client per root directory.
  local id = state.clients_by_root[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if not client or is_stopped(client) then
    local config = base_config()
    config.root_dir = root
    local ok, new_id = pcall(vim.lsp.start_client, config)
    if not ok or not new_id then
      notify('could not start ' .. table.concat(M.config.cmd, ' ') .. ': ' .. tostring(new_id), vim.log.levels.ERROR)
      return nil
    end
    id = new_id
    state.clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

--- Stop every dfort client; wait up to `timeout` ms for them to exit.
function M.stop(timeout)
  local clients = M.clients(nil)
  for _, client in ipairs(clients) do
    pcall(client_call, client, 'stop')
  end
  vim.wait(timeout or 3000, function()
    for _, client in ipairs(clients) do
      if not is_stopped(client) then
        return false
      end
    end
    return true
  end, 20)
  state.clients_by_root = {}
end

-- Positions -----------------------------------------------------------------

-- Byte column -> LSP character in the given encoding.
local function byte_to_character(line, col, encoding)
  if encoding == 'utf-8' then
    return col
  end
  local n = 0
  for i = 1, math.min(col, #line) do
    local b = line:byte(i)
    if b < 0x80 or b >= 0xC0 then
      n = n + 1
      if encoding == 'utf-16' and b >= 0xF0 then
        n = n + 1 -- outside the BMP: a surrogate pair
      end
    end
  end
  return n
end

--- LSP position of the cursor in the window showing `bufnr`.
function M.cursor_position(bufnr, encoding)
  local win = 0
  if bufnr ~= api.nvim_get_current_buf() then
    win = vim.fn.bufwinid(bufnr)
    if win == -1 then
      return { line = 0, character = 0 }
    end
  end
  local cursor = api.nvim_win_get_cursor(win)
  local row, col = cursor[1] - 1, cursor[2]
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  return { line = row, character = byte_to_character(line, col, encoding or 'utf-16') }
end

-- Workspace edits -------------------------------------------------------------

local function uri_file(uri)
  local ok, fname = pcall(vim.uri_to_fname, uri)
  return ok and fname or nil
end

-- Files an edit touches: { fname = ..., created = bool }.
local function edit_targets(edit)
  local out, seen = {}, {}
  local function add(uri, created)
    local fname = uri and uri_file(uri)
    if not fname then
      return
    end
    if seen[fname] then
      seen[fname].created = seen[fname].created or created
      return
    end
    seen[fname] = { fname = fname, created = created }
    table.insert(out, seen[fname])
  end
  if type(edit.documentChanges) == 'table' then
    for _, change in ipairs(edit.documentChanges) do
      if change.kind == 'create' then
        add(change.uri, true)
      elseif change.kind == 'rename' then
        add(change.newUri, false)
      elseif change.kind == nil and change.textDocument then
        add(change.textDocument.uri, false)
      end
    end
  elseif type(edit.changes) == 'table' then
    for uri, _ in pairs(edit.changes) do
      add(uri, false)
    end
  end
  return out
end

-- Neovim's CreateFile truncates the file on disk but leaves a buffer that is
-- already loaded with its old text: the text edit that follows would land
-- before the old text, and `:write` would then stop at "The file has been
-- changed since reading it" (a prompt, even with `:write!`). So a CreateFile
-- for a file whose buffer is loaded is done here, on the buffer: emptied and
-- left for the write that follows. Returns the edit to hand to Neovim.
local function take_over_created_files(edit)
  if type(edit.documentChanges) ~= 'table' then
    return edit
  end
  local changes = {}
  for _, change in ipairs(edit.documentChanges) do
    local keep = true
    if change.kind == 'create' then
      local opts = change.options or {}
      local fname = uri_file(change.uri)
      local b = fname and vim.fn.bufnr(fname) or -1
      if b ~= -1 and api.nvim_buf_is_loaded(b) then
        keep = false
        if opts.overwrite or not opts.ignoreIfExists then
          api.nvim_buf_set_lines(b, 0, -1, false, {})
        end
      end
    end
    if keep then
      table.insert(changes, change)
    end
  end
  local copy = vim.deepcopy(edit)
  copy.documentChanges = changes
  return copy
end

-- Will the buffer of `fname` be empty when the edit's text lands in it?
local function starts_empty(fname, edit)
  if type(edit.documentChanges) == 'table' then
    for _, change in ipairs(edit.documentChanges) do
      local opts = change.options or {}
      if change.kind == 'create' and uri_file(change.uri) == fname and (opts.overwrite or not opts.ignoreIfExists) then
        return true
      end
    end
  end
  local b = vim.fn.bufnr(fname)
  if b ~= -1 and api.nvim_buf_is_loaded(b) then
    local lines = api.nvim_buf_get_lines(b, 0, -1, false)
    return #lines == 0 or (#lines == 1 and lines[1] == '')
  end
  local stat = uv.fs_stat(fname)
  return not stat or stat.size == 0
end

-- Text "a\nb\n" inserted into an empty buffer leaves lines a, b, "" which
-- `:write` (with 'eol') saves as "a\nb\n\n". Drop that last empty line.
local function trim_final_newline(fname)
  local b = vim.fn.bufnr(fname)
  if b == -1 or not api.nvim_buf_is_loaded(b) then
    return
  end
  local n = api.nvim_buf_line_count(b)
  if n > 1 and api.nvim_buf_get_lines(b, n - 1, n, false)[1] == '' then
    api.nvim_buf_set_lines(b, n - 1, n, false, {})
  end
end

local function write_buffer(fname)
  local b = vim.fn.bufadd(fname)
  if not api.nvim_buf_is_loaded(b) then
    vim.fn.bufload(b)
  end
  vim.fn.mkdir(vim.fn.fnamemodify(fname, ':p:h'), 'p')
  local ok, err = pcall(api.nvim_buf_call, b, function()
    vim.cmd('silent keepalt write!')
  end)
  if not ok then
    error('could not write ' .. fname .. ': ' .. tostring(err))
  end
end

--- Apply a WorkspaceEdit and write every file it touches except `keep`
--- (the file the user is editing, left modified for them to save). Works
--- whether the server sent `documentChanges` with CreateFile or plain
--- `changes` for a file that does not exist yet. Returns the written paths.
function M.apply_workspace_edit(edit, offset_encoding, keep)
  local targets = edit_targets(edit)
  for _, target in ipairs(targets) do
    target.empty = starts_empty(target.fname, edit)
  end
  vim.lsp.util.apply_workspace_edit(take_over_created_files(edit), offset_encoding or 'utf-16')
  for _, target in ipairs(targets) do
    if target.empty then
      trim_final_newline(target.fname)
    end
  end
  local written = {}
  for _, target in ipairs(targets) do
    if not same_file(target.fname, keep) then
      write_buffer(target.fname)
      table.insert(written, target.fname)
    end
  end
  return written
end

-- The generate commands write their files on the server's side, then ask
-- for the first to be shown. A buffer already loaded for it (a previous
-- generation) is re-read from disk first, then Neovim's own handler opens it.
show_document_handler = function(err, params, ctx, config)
  if type(params) == 'table' and type(params.uri) == 'string' then
    local ok, b = pcall(vim.uri_to_bufnr, params.uri)
    if ok and api.nvim_buf_is_loaded(b) and not vim.bo[b].modified then
      pcall(api.nvim_buf_call, b, function()
        vim.cmd('silent! edit!')
      end)
    end
  end
  local default = vim.lsp.handlers['window/showDocument']
  if default then
    return default(err, params, ctx, config)
  end
  return { success = false }
end

-- Code actions ------------------------------------------------------------------

local function response_error(what, resp, err)
  if resp == nil then
    return what .. ': ' .. tostring(err or 'no response')
  end
  local e = resp.err or resp.error
  if type(e) == 'table' then
    return what .. ': ' .. tostring(e.message or vim.inspect(e))
  end
  return what .. ': ' .. tostring(e)
end

local function request(client, bufnr, method, params, timeout)
  local resp, err = client_call(client, 'request_sync', method, params, timeout, bufnr)
  if resp == nil or resp.err or resp.error then
    return nil, response_error(method, resp, err)
  end
  local result = resp.result
  if result == vim.NIL then
    result = nil
  end
  return result, nil, true
end

local function resolve_opts(bufnr, opts)
  opts = opts or {}
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local timeout = opts.timeout or M.config.timeout
  return bufnr, opts, timeout
end

--- All code actions dfort offers at a position (default: the cursor).
--- Returns actions, client.
function M.code_actions(bufnr, opts)
  local timeout
  bufnr, opts, timeout = resolve_opts(bufnr, opts)
  local client, cerr = M.client(bufnr, timeout)
  if not client then
    return nil, cerr
  end
  local pos = opts.position or M.cursor_position(bufnr, client.offset_encoding)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = pos, ['end'] = pos },
    context = { diagnostics = {} },
  }
  local result, err = request(client, bufnr, 'textDocument/codeAction', params, timeout)
  if err then
    return nil, err
  end
  local actions = {}
  for _, item in ipairs(result or {}) do
    -- A bare Command has a string `command`; a CodeAction has a table or none.
    table.insert(actions, item)
  end
  return actions, client
end

local function find_action(actions, pattern)
  for _, action in ipairs(actions) do
    if type(action.title) == 'string' and action.title:find(pattern) then
      return action
    end
  end
  return nil
end

-- Verify: the values a root's arguments need ----------------------------------

-- How long an answer to `vim.ui.input` may take (an asynchronous UI's too).
local ANSWER_TIMEOUT = 600000

--- The value `text` gives for a missing value `m` (the server's `missing`
--- entries: `{ name, key, what, form }`), or nil when it is not one.
function M.parse_value(m, text)
  local t = vim.trim(text or '')
  if m.key == 'char' then
    return t ~= '' and t or nil
  end
  if m.key == 'logical' then
    local v = t:gsub('^%.', ''):gsub('%.$', ''):lower()
    if v == 'true' or v == 't' or v == '1' then
      return true
    elseif v == 'false' or v == 'f' or v == '0' then
      return false
    end
    return nil
  end
  local function integer(x)
    return x:match('^[+-]?%d+$') and tonumber(x) or nil
  end
  if tostring(m.form):sub(1, 1) == '[' then
    local items = {}
    for x in t:gsub('^%[', ''):gsub('%]$', ''):gmatch('[^%s,]+') do
      local v = integer(x)
      if v == nil then
        return nil
      end
      table.insert(items, v)
    end
    return #items > 0 and items or nil
  end
  local v = integer(t)
  if v == nil or (m.key == 'size' and v < 0) then
    return nil
  end
  return v
end

-- Asks for each missing value with `vim.ui.input` (waiting for an
-- asynchronous UI's answer). The values by `dfort.toml` key, or nil when the
-- user gave none or not a value.
local function ask_values(result)
  local values = {}
  for _, m in ipairs(result.missing) do
    local answered, answer = false, nil
    local prompt = string.format('dfort verify %s: %s, %s (kept in %s): ', tostring(result.root), m.what, m.form, tostring(result.config))
    vim.ui.input({ prompt = prompt }, function(input)
      answered, answer = true, input
    end)
    vim.wait(ANSWER_TIMEOUT, function()
      return answered
    end, 20)
    if answer == nil then
      return nil
    end
    local v = M.parse_value(m, answer)
    if v == nil then
      notify(string.format('"%s" is not %s for %s', answer, m.form, m.what), vim.log.levels.WARN)
      return nil
    end
    values[m.key] = values[m.key] or {}
    values[m.key][m.name] = v
  end
  return values
end

-- Runs `dfort.verify`: the server answers the values nobody gave (`missing`),
-- they are asked for, the server keeps them in dfort.toml and runs again (a
-- size may follow from an integer, so up to four rounds). Without answers the
-- result's summary names the dfort.toml table. Returns result, err.
local function run_verify(client, bufnr, command, timeout)
  local args = { command.arguments[1], command.arguments[2], { ask = true } }
  local function run()
    return request(client, bufnr, 'workspace/executeCommand', { command = command.command, arguments = args }, timeout)
  end
  local result, err = run()
  for _ = 1, 4 do
    if err or type(result) ~= 'table' or type(result.missing) ~= 'table' or #result.missing == 0 then
      break
    end
    local values = ask_values(result)
    if not values then
      break
    end
    args[3] = { ask = true, values = values }
    result, err = run()
  end
  return result, err
end

local function execute_command(client, bufnr, command, timeout)
  if command.command == 'dfort.verify' and type(command.arguments) == 'table' then
    return run_verify(client, bufnr, command, timeout)
  end
  return request(client, bufnr, 'workspace/executeCommand', {
    command = command.command,
    arguments = command.arguments,
  }, timeout)
end

-- Apply a code action: resolve it if needed, apply its edit (writing files
-- other than the buffer's own), then run its command. Returns
-- { title, written = paths, result = command result }.
-- The files a command's result says the server wrote (the generate
-- commands answer `{ written, files, shown }`).
local function files_written(result)
  local out = {}
  if type(result) == 'table' and result.written == true and type(result.files) == 'table' then
    for _, f in ipairs(result.files) do
      table.insert(out, f)
    end
  end
  return out
end

local function run_action(client, bufnr, action, timeout)
  if type(action.command) == 'string' then
    -- A bare Command, not a CodeAction.
    local result, err = execute_command(client, bufnr, action, timeout)
    if err then
      return nil, err
    end
    return { title = action.title, written = files_written(result), result = result }
  end
  local caps = client.server_capabilities or {}
  local provider = caps.codeActionProvider
  if action.edit == nil and action.command == nil and type(provider) == 'table' and provider.resolveProvider then
    local resolved, err = request(client, bufnr, 'codeAction/resolve', action, timeout)
    if err then
      return nil, err
    end
    action = resolved or action
  end
  local out = { title = action.title, written = {} }
  if type(action.edit) == 'table' then
    out.written = M.apply_workspace_edit(action.edit, client.offset_encoding, buf_file(bufnr))
  end
  if type(action.command) == 'table' then
    local result, err = execute_command(client, bufnr, action.command, timeout)
    if err then
      return nil, err
    end
    out.result = result
    for _, f in ipairs(files_written(result)) do
      table.insert(out.written, f)
    end
  end
  return out
end

--- Find the code action whose title matches `pattern` at a position and run
--- it. Returns the outcome table or nil, error.
function M.run_code_action(pattern, bufnr, opts)
  local timeout
  bufnr, opts, timeout = resolve_opts(bufnr, opts)
  local actions, client = M.code_actions(bufnr, opts)
  if not actions then
    return nil, client
  end
  local action = find_action(actions, pattern)
  if not action then
    local titles = {}
    for _, a in ipairs(actions) do
      table.insert(titles, a.title)
    end
    return nil, 'no code action matching "' .. pattern .. '" here (offered: '
      .. (next(titles) and table.concat(titles, '; ') or 'none') .. ')'
  end
  return run_action(client, bufnr, action, opts.timeout or timeout)
end

--- Generate the adjoint or tangent of the unit at a position (default: the
--- cursor). `mode` is 'adjoint' or 'tangent'. Returns the paths written
--- (e.g. `<stem>_b.f90` and `dfort_stack.f90`), or nil, error.
function M.generate(mode, bufnr, opts)
  if mode ~= 'adjoint' and mode ~= 'tangent' then
    return nil, 'mode must be "adjoint" or "tangent"'
  end
  local out, err = M.run_code_action('^Generate ' .. mode, bufnr, opts)
  if not out then
    return nil, err
  end
  if type(out.result) == 'table' and out.result.written == false then
    return nil, tostring(out.result.problems or 'nothing written'), out
  end
  return out.written, nil, out
end

--- Insert `!$ad independent(v)` / `!$ad dependent(v)` for the variable at a
--- position. `kind` is 'independent' or 'dependent'. Returns the action title.
function M.mark(kind, bufnr, opts)
  if kind ~= 'independent' and kind ~= 'dependent' then
    return nil, 'kind must be "independent" or "dependent"'
  end
  local out, err = M.run_code_action('^Mark .* as ' .. kind, bufnr, opts)
  if not out then
    return nil, err
  end
  return out.title
end

local function result_text(result)
  if result == nil or result == vim.NIL then
    return '(no result)'
  end
  if type(result) == 'string' then
    return result
  end
  if type(result) == 'table' then
    for _, key in ipairs({ 'message', 'summary', 'text', 'report' }) do
      if type(result[key]) == 'string' then
        return result[key]
      end
    end
  end
  return vim.inspect(result)
end

--- Run "Verify derivatives of ..." for the unit at a position. Returns the
--- result as text, nil, and the raw result; or nil, error.
function M.verify(bufnr, opts)
  bufnr, opts = resolve_opts(bufnr, opts)
  opts = vim.tbl_extend('keep', { timeout = opts.timeout or M.config.verify_timeout }, opts)
  local out, err = M.run_code_action('^Verify derivatives', bufnr, opts)
  if not out then
    return nil, err
  end
  return result_text(out.result), nil, out.result
end

-- Commands ----------------------------------------------------------------------

local function show_lines(title, text, level)
  notify(title .. (text:find('\n') and '\n' or ': ') .. text, level)
end

local function show_verify(text, err, raw)
  if not text then
    notify(tostring(err), vim.log.levels.ERROR)
    return
  end
  local failed = type(raw) == 'table' and raw.ok == false
  show_lines('verify', text, failed and vim.log.levels.WARN or nil)
end

-- "Verify derivatives" chosen from Neovim's own code action menu
-- (`vim.lsp.buf.code_action`) runs here, so that it asks for values too.
local function verify_from_menu(command, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client then
    return
  end
  local result, err = run_verify(client, ctx.bufnr, command, M.config.verify_timeout)
  show_verify(result ~= nil and result_text(result) or nil, err, result)
end

local function create_commands()
  local cmd = api.nvim_create_user_command
  local function generate_cmd(mode)
    return function()
      -- The server says what it wrote and opens it.
      local paths, err = M.generate(mode)
      if not paths then
        notify(err, vim.log.levels.ERROR)
      end
    end
  end
  cmd('DfortAdjoint', generate_cmd('adjoint'), { force = true, desc = 'dfort: generate the adjoint of the unit at the cursor' })
  cmd('DfortTangent', generate_cmd('tangent'), { force = true, desc = 'dfort: generate the tangent of the unit at the cursor' })
  cmd('DfortVerify', function()
    show_verify(M.verify())
  end, { force = true, desc = 'dfort: check the derivatives of the unit at the cursor' })
  local function mark_cmd(kind)
    return function()
      local title, err = M.mark(kind)
      if not title then
        notify(err, vim.log.levels.ERROR)
      end
    end
  end
  cmd('DfortMarkIndependent', mark_cmd('independent'), { force = true, desc = 'dfort: mark the variable at the cursor as independent' })
  cmd('DfortMarkDependent', mark_cmd('dependent'), { force = true, desc = 'dfort: mark the variable at the cursor as dependent' })
end

-- Setup -------------------------------------------------------------------------

function M.setup(opts)
  opts = opts or {}
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts)
  -- Lists replace, they do not merge index by index.
  for _, key in ipairs({ 'cmd', 'filetypes', 'root_markers' }) do
    if opts[key] ~= nil then
      M.config[key] = vim.deepcopy(opts[key])
    end
  end
  if opts.settings ~= nil then
    M.config.settings = vim.deepcopy(opts.settings)
  end
  if type(M.config.cmd) == 'string' then
    M.config.cmd = { M.config.cmd }
  end

  create_commands()
  if vim.lsp.commands then
    vim.lsp.commands['dfort.verify'] = verify_from_menu
  end
  if not M.config.autostart then
    return M
  end

  if has_config_api() then -- 0.11+
    local config = base_config()
    config.filetypes = M.config.filetypes
    config.root_dir = function(bufnr, on_dir)
      local fname = buf_file(bufnr)
      if fname then
        on_dir(M.find_root(fname))
      end
    end
    vim.lsp.config(NAME, config)
    vim.lsp.enable(NAME)
    -- Buffers already open: 0.11.x versions that do not re-run FileType for
    -- them get attached here (vim.lsp.start reuses a running client).
    vim.schedule(function()
      for _, b in ipairs(api.nvim_list_bufs()) do
        if api.nvim_buf_is_loaded(b) and filetype_matches(b) and #M.clients(b) == 0 then
          M.attach(b)
        end
      end
    end)
    return M
  end

  local group = api.nvim_create_augroup('dfort', { clear = true })
  api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = M.config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
    desc = 'dfort: start or attach the language server',
  })
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and filetype_matches(b) then
      M.attach(b)
    end
  end
  return M
end

return M
