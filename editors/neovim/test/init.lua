-- Headless real-client test of the dfort Neovim plugin against `dfort lsp`.
--
--   DFORT_BIN=/path/to/dfort DFORT_TEST_DIR=/tmp/x DFORT_TEST_OUT=/tmp/x/report.txt \
--     nvim --headless -n -i NONE -u editors/neovim/test/init.lua
--
-- DFORT_TEST_DIR holds copies of tests/fixtures/papers/p000_bratu.f (fixed
-- form), p000_fig1.f90 (free form) and p003_fig14a_iccg.f90 (address
-- recovery: `ii = ii/2` cannot be inverted). The report goes to DFORT_TEST_OUT;
-- the exit code is 0 when every check passed, 1 otherwise.

local this_file = debug.getinfo(1, 'S').source:gsub('^@', '')
local test_dir = vim.fn.fnamemodify(this_file, ':p:h')
local plugin_root = vim.fn.fnamemodify(test_dir, ':h')
vim.opt.runtimepath:prepend(plugin_root)
package.path = test_dir .. '/?.lua;' .. package.path

local report = require('dfort_test_report')

local bin = os.getenv('DFORT_BIN')
local dir = os.getenv('DFORT_TEST_DIR')
local out = os.getenv('DFORT_TEST_OUT')
local global_timeout_ms = tonumber(os.getenv('DFORT_TEST_TIMEOUT_MS') or '') or 50000
local request_timeout_ms = 15000

report.init(out)

-- Keep what the plugin tells the user in the report.
vim.notify = function(msg, level)
  report.info('notify' .. (level and level >= vim.log.levels.WARN and ' (warning/error)' or ''), msg)
end

-- A hang becomes a failure with a message.
local timer = vim.loop.new_timer()
timer:start(global_timeout_ms, 0, vim.schedule_wrap(function()
  report.fail('global timeout', 'the test did not finish within ' .. global_timeout_ms .. ' ms')
  pcall(function()
    require('dfort').stop(500)
  end)
  report.finish(true)
end))

local function require_env()
  assert(bin and bin ~= '', 'DFORT_BIN is not set')
  assert(dir and dir ~= '', 'DFORT_TEST_DIR is not set')
  assert(vim.fn.executable(bin) == 1, 'DFORT_BIN is not executable: ' .. bin)
end

-- Markdown text of a hover result (MarkupContent, MarkedString or a list).
local function hover_text(result)
  if type(result) ~= 'table' then
    return nil
  end
  local contents = result.contents
  local parts = {}
  local function add(c)
    if type(c) == 'string' then
      table.insert(parts, c)
    elseif type(c) == 'table' and type(c.value) == 'string' then
      table.insert(parts, c.value)
    end
  end
  if type(contents) == 'table' and contents.value == nil and contents[1] ~= nil then
    for _, c in ipairs(contents) do
      add(c)
    end
  else
    add(contents)
  end
  return table.concat(parts, '\n')
end

-- 0-based LSP position of the `nth` occurrence of `needle` (plain text) on the
-- first line containing `line_needle` (plain text). The fixtures are ASCII,
-- so byte columns are UTF-16 columns.
local function find_position(bufnr, line_needle, needle, nth)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  for i, line in ipairs(lines) do
    if line:find(line_needle, 1, true) then
      local from = 1
      local col
      for _ = 1, nth or 1 do
        col = line:find(needle, from, true)
        assert(col, 'no "' .. needle .. '" on line ' .. i)
        from = col + 1
      end
      return { line = i - 1, character = col - 1 }
    end
  end
  error('no line containing "' .. line_needle .. '"')
end

local function open(name)
  vim.cmd('edit ' .. vim.fn.fnameescape(dir .. '/' .. name))
  local bufnr = vim.api.nvim_get_current_buf()
  assert(vim.bo[bufnr].filetype == 'fortran', name .. ': filetype is "' .. vim.bo[bufnr].filetype .. '"')
  return bufnr
end

local function hover(bufnr, pos)
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = pos }
  local responses, err = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', params, request_timeout_ms)
  assert(responses, 'hover: ' .. tostring(err))
  for _, resp in pairs(responses) do
    if resp.err or resp.error then
      error('hover error: ' .. vim.inspect(resp.err or resp.error))
    end
    local text = hover_text(resp.result)
    if text and text ~= '' then
      return text
    end
  end
  error('hover returned no contents: ' .. vim.inspect(responses))
end

-- `active` true: the hover must say active (and not "not active");
-- false: it must say "not active".
local function check_hover(label, bufnr, pos, var, active)
  report.step(label, function()
    local text = hover(bufnr, pos)
    report.info(label .. ' text', text)
    local first = text:match('[^\n]*')
    assert(first:find('%f[%w_]' .. var .. '%f[^%w_]'),
      'the first line does not name `' .. var .. '`: ' .. first)
    local lower = text:lower()
    assert(lower:find('%f[%w]active%f[^%w]'), 'no "active" in the hover')
    local negated = lower:find('not active', 1, true) ~= nil
    if active then
      assert(not negated, '`' .. var .. '` is reported as not active')
    else
      assert(negated, '`' .. var .. '` is not reported as "not active"')
    end
  end)
end

local function file_exists(path)
  return vim.loop.fs_stat(path) ~= nil
end

local function read_file(path)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

local function run()
  report.step('environment', require_env)
  if report.failed() then
    return
  end

  local dfort
  report.step('setup', function()
    dfort = require('dfort')
    dfort.setup({
      cmd = { bin, 'lsp' },
      -- Configured roots replace the server's default ones (procedures
      -- nobody calls, with their directives or intents), so both units are
      -- named. `prm` is left out on purpose: that it is then not active
      -- shows the settings reached the server (by intents it would be).
      settings = {
        roots = {
          { name = 'bratu', independent = { 'x' }, dependent = { 'f' } },
          { name = 'tbr_fig1', independent = { 'x' }, dependent = { 'x' } },
        },
      },
    })
    for _, c in ipairs({ 'DfortAdjoint', 'DfortTangent', 'DfortVerify', 'DfortMarkIndependent', 'DfortMarkDependent' }) do
      assert(vim.fn.exists(':' .. c) == 2, 'command :' .. c .. ' missing')
    end
  end)
  if report.failed() then
    return
  end

  local fixed, free
  report.step('open files', function()
    fixed = open('p000_bratu.f')
    free = open('p000_fig1.f90')
  end)
  if report.failed() then
    return
  end

  report.step('client initialized', function()
    for _, b in ipairs({ fixed, free }) do
      local client, err = dfort.client(b, request_timeout_ms)
      assert(client, err)
      report.info('client for ' .. vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ':t'),
        'id ' .. client.id .. ', root ' .. tostring(client.config.root_dir) .. ', offset encoding ' .. client.offset_encoding)
    end
    local a, b = dfort.client(fixed), dfort.client(free)
    assert(a.id == b.id, 'the two files (same root) got two clients')
  end)
  if report.failed() then
    return
  end

  -- Fixed form: `x` inside exp(x(i)/...) in the loop of bratu.
  vim.api.nvim_set_current_buf(fixed)
  local bratu_pos = find_position(fixed, 'F(i) = F(i)-2*x(i)', 'x(i)', 1)
  check_hover('hover fixed form (x in bratu loop)', fixed, bratu_pos, 'x', true)
  -- Not an independent by the settings.
  local prm_pos = find_position(fixed, 'F(i) = F(i)-2*x(i)', 'prm(1)', 1)
  check_hover('hover fixed form (prm not active by the settings)', fixed, prm_pos, 'prm', false)

  report.step('references and rename in fixed form', function()
    -- `x` of bratu: every use, then a rename whose edits Neovim applies.
    local params = { textDocument = { uri = vim.uri_from_bufnr(fixed) }, position = bratu_pos, context = { includeDeclaration = true } }
    local responses = vim.lsp.buf_request_sync(fixed, 'textDocument/references', params, request_timeout_ms) or {}
    local count = 0
    for _, resp in pairs(responses) do
      assert(not (resp.err or resp.error), vim.inspect(resp))
      count = count + #(resp.result or {})
    end
    report.info('references of x', tostring(count))
    assert(count >= 5, 'references of x in bratu: ' .. count)
    -- A longer name would push line 18 past column 72: refused, saying so.
    params.newName = 'xs'
    responses = vim.lsp.buf_request_sync(fixed, 'textDocument/rename', params, request_timeout_ms) or {}
    local refused = false
    for _, resp in pairs(responses) do
      local e = resp.err or resp.error
      refused = refused or (e ~= nil and tostring(e.message):find('past column 72', 1, true) ~= nil)
    end
    assert(refused, 'renaming x to xs was not refused: ' .. vim.inspect(responses))
    params.newName = 'u'
    responses = vim.lsp.buf_request_sync(fixed, 'textDocument/rename', params, request_timeout_ms) or {}
    local edits = 0
    for _, resp in pairs(responses) do
      assert(not (resp.err or resp.error), vim.inspect(resp))
      for _, e in pairs((resp.result or {}).changes or {}) do
        edits = edits + #e
      end
    end
    assert(edits == count, 'rename edits ' .. edits .. ' places, references ' .. count)
  end)

  report.step('completion and signature help in fixed form', function()
    -- The server's completion is what <C-x><C-o> shows: omnifunc is LSP's.
    assert(vim.bo[fixed].omnifunc == 'v:lua.vim.lsp.omnifunc', 'omnifunc is ' .. vim.bo[fixed].omnifunc)
    -- `pr|` in the loop of bratu: its dummy `prm` first.
    local at = find_position(fixed, 'F(i) = F(i)-2*x(i)', 'prm(1)', 1)
    at.character = at.character + 2
    local params = { textDocument = { uri = vim.uri_from_bufnr(fixed) }, position = at }
    local responses = vim.lsp.buf_request_sync(fixed, 'textDocument/completion', params, request_timeout_ms) or {}
    local first
    for _, resp in pairs(responses) do
      assert(not (resp.err or resp.error), vim.inspect(resp))
      local items = resp.result and (resp.result.items or resp.result) or {}
      first = first or (items[1] and items[1].label)
    end
    report.info('first completion of pr', tostring(first))
    assert(first == 'prm', 'first completion of pr: ' .. tostring(first))
    -- Inside `exp(` of the same line: the intrinsic's argument.
    local e = find_position(fixed, 'F(i) = F(i)-2*x(i)', 'exp(', 1)
    e.character = e.character + 4
    params.position = e
    responses = vim.lsp.buf_request_sync(fixed, 'textDocument/signatureHelp', params, request_timeout_ms) or {}
    local label
    for _, resp in pairs(responses) do
      assert(not (resp.err or resp.error), vim.inspect(resp))
      label = label or (resp.result and resp.result.signatures[1].label)
    end
    report.info('signature in exp(', tostring(label))
    assert(label == 'exp(x)', 'signature in exp(: ' .. tostring(label))
  end)

  -- Semantic tokens (0.10 and later have get_at_pos): `x` of bratu's loop
  -- is active wherever it appears, and drawn so.
  local token_step = (vim.lsp.semantic_tokens and vim.lsp.semantic_tokens.get_at_pos and report.step) or function() end
  token_step('semantic tokens mark active variables', function()
    local at = find_position(fixed, 'F(i) = F(i)-2*x(i)', 'x(i)', 1)
    local found
    vim.wait(request_timeout_ms, function()
      for _, t in ipairs(vim.lsp.semantic_tokens.get_at_pos(fixed, at.line, at.character) or {}) do
        if t.modifiers and t.modifiers.active then
          found = t
        end
      end
      return found ~= nil
    end, 100)
    report.info('token at x', found and (found.type .. ' ' .. vim.inspect(found.modifiers)) or 'none')
    assert(found, 'no active semantic token at x of bratu')
    assert(vim.fn.hlexists('@lsp.mod.active') == 1, 'no highlight group @lsp.mod.active')
  end)

  report.step('code lenses above bratu', function()
    vim.api.nvim_set_current_buf(fixed)
    pcall(vim.lsp.codelens.refresh, { bufnr = fixed })
    local titles
    vim.wait(request_timeout_ms, function()
      titles = {}
      for _, l in ipairs(vim.lsp.codelens.get(fixed) or {}) do
        if l.command then
          table.insert(titles, l.command.title)
        end
      end
      return #titles >= 4
    end, 100)
    report.info('lenses', table.concat(titles, ' | '))
    assert(titles[1] == 'adjoint' and titles[2] == 'tangent' and titles[3] == 'verify', 'lenses: ' .. vim.inspect(titles))
    assert((titles[4] or ''):find('adjoint: active', 1, true), 'no summary lens: ' .. vim.inspect(titles))
  end)

  -- Free form: `x` in sin(x(i)) of tbr_fig1.
  local fig1_pos = find_position(free, 'x(i) = j + sin(x(i))', 'x(i)', 2)
  check_hover('hover free form (x in tbr_fig1)', free, fig1_pos, 'x', true)

  -- Folds from the server (Neovim 0.11 and later): the labelled DO of bratu
  -- (lines 21-25, its CONTINUE on 26 left open) and the IF arm of tbr_fig1.
  local fold_step = (vim.lsp.foldexpr and report.step) or function() end
  fold_step('folds from the server', function()
    local function fold_of(buf, line)
      local win = vim.fn.bufwinid(buf)
      if win == -1 then
        vim.api.nvim_set_current_buf(buf)
        win = vim.api.nvim_get_current_win()
      end
      assert(vim.wo[win].foldmethod == 'expr', 'foldmethod is ' .. vim.wo[win].foldmethod)
      local first, last
      vim.wait(request_timeout_ms, function()
        vim.api.nvim_win_call(win, function()
          vim.cmd('normal! zX')
          vim.api.nvim_win_set_cursor(win, { line, 0 })
          if vim.fn.foldlevel(line) > 0 then
            vim.cmd('normal! zc')
            first, last = vim.fn.foldclosed(line), vim.fn.foldclosedend(line)
            vim.cmd('normal! zo')
          end
        end)
        return first ~= nil and first > 0
      end, 100)
      return first, last
    end
    vim.api.nvim_set_current_buf(fixed)
    local a, b = fold_of(fixed, 22)
    report.info('fold around bratu line 22', tostring(a) .. '-' .. tostring(b))
    assert(a == 21 and b == 25, 'bratu line 22 folds ' .. tostring(a) .. '-' .. tostring(b) .. ', not 21-25')
    vim.api.nvim_set_current_buf(free)
    a, b = fold_of(free, 15)
    report.info('fold around tbr_fig1 line 15', tostring(a) .. '-' .. tostring(b))
    assert(a == 14 and b == 15, 'tbr_fig1 line 15 folds ' .. tostring(a) .. '-' .. tostring(b) .. ', not 14-15')
  end)

  report.step('code actions in bratu', function()
    local actions, err = dfort.code_actions(fixed, { position = bratu_pos, timeout = request_timeout_ms })
    assert(actions, err)
    local titles = {}
    for _, a in ipairs(actions) do
      table.insert(titles, a.title)
    end
    report.info('code action titles', table.concat(titles, '\n'))
    local joined = table.concat(titles, '\n')
    assert(joined:find('Generate adjoint of bratu', 1, true), 'no "Generate adjoint of bratu"')
    assert(joined:find('Generate tangent of bratu', 1, true), 'no "Generate tangent of bratu"')
  end)

  report.step('generate adjoint of bratu', function()
    local adjoint = dir .. '/p000_bratu_b.f90'
    local stack = dir .. '/dfort_stack.f90'
    local paths, err = dfort.generate('adjoint', fixed, { position = bratu_pos, timeout = request_timeout_ms })
    assert(paths, err)
    report.info('written', table.concat(paths, '\n'))
    assert(file_exists(adjoint), adjoint .. ' was not written')
    assert(file_exists(stack), stack .. ' was not written')
    local text = read_file(adjoint) or ''
    assert(text:lower():find('subroutine%s+bratu_b'), 'p000_bratu_b.f90 has no subroutine bratu_b')
    assert((read_file(stack) or ''):lower():find('module%s+dfort_stack'), 'dfort_stack.f90 has no module dfort_stack')
    assert(not text:find('\n\n$'), 'p000_bratu_b.f90 ends with a blank line')
    assert(not vim.api.nvim_buf_get_option(fixed, 'modified'), 'the source buffer was modified')
    -- The server asked for the adjoint to be shown (window/showDocument,
    -- which Neovim handles from 0.8 on).
    if vim.fn.has('nvim-0.8') == 1 then
      local shown = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':t')
      assert(shown == 'p000_bratu_b.f90', 'the current buffer is ' .. shown .. ', not the adjoint')
    end
  end)

  -- A second generation must replace the files, not append to them (the
  -- generated buffers are loaded now).
  report.step('generate adjoint again', function()
    local adjoint = dir .. '/p000_bratu_b.f90'
    local before = read_file(adjoint)
    local paths, err = dfort.generate('adjoint', fixed, { position = bratu_pos, timeout = request_timeout_ms })
    assert(paths, err)
    assert(read_file(adjoint) == before, 'the adjoint file changed on the second generation')
  end)

  -- From a statement to its block in the adjoint (Go to Implementation)
  -- and back from the block's heading comment (Go to Definition).
  report.step('statement to its adjoint block and back', function()
    local adjoint = dir .. '/p000_bratu_b.f90'
    local params = { textDocument = { uri = vim.uri_from_bufnr(fixed) }, position = bratu_pos }
    local responses, err = vim.lsp.buf_request_sync(fixed, 'textDocument/implementation', params, request_timeout_ms)
    assert(responses, err)
    local loc
    for _, r in pairs(responses) do
      for _, l in ipairs(r.result or {}) do
        if l.uri:match('p000_bratu_b%.f90$') then
          loc = l
        end
      end
    end
    assert(loc, 'no block in p000_bratu_b.f90: ' .. vim.inspect(responses))
    local lines = vim.split(read_file(adjoint) or '', '\n')
    local heading = lines[loc.range.start.line + 1] or ''
    local want = '! p000_bratu.f:' .. (bratu_pos.line + 1) .. ': F(i) = F(i)-2*x(i)'
    assert(vim.trim(heading):sub(1, #want) == want, 'the block is headed by ' .. heading)
    report.info('block', heading)
    local b = vim.fn.bufadd(adjoint)
    vim.fn.bufload(b)
    if #dfort.clients(b) == 0 then
      dfort.attach(b)
    end
    local attached = vim.wait(request_timeout_ms, function()
      return #dfort.clients(b) > 0
    end, 50)
    assert(attached, 'the server is not attached to the adjoint')
    local back = { textDocument = { uri = vim.uri_from_bufnr(b) }, position = { line = loc.range.start.line, character = 4 } }
    responses, err = vim.lsp.buf_request_sync(b, 'textDocument/definition', back, request_timeout_ms)
    assert(responses, err)
    local target
    for _, r in pairs(responses) do
      target = target or (r.result or {})[1]
    end
    assert(target, 'no definition: ' .. vim.inspect(responses))
    assert(target.uri == vim.uri_from_bufnr(fixed), 'definition in ' .. target.uri)
    assert(target.range.start.line == bratu_pos.line, 'definition on line ' .. target.range.start.line)
  end)

  -- Neovim's own code-action menu (what `gra` opens), with the action
  -- chosen: the file lands on disk and opens, no buffer is left unsaved.
  -- (`apply` and `filter` exist from 0.8 on.)
  local menu_step = vim.fn.has('nvim-0.8') == 1 and report.step or function() end
  menu_step('Generate adjoint from the built-in code-action menu', function()
    local adjoint = dir .. '/p000_bratu_b.f90'
    os.remove(adjoint)
    vim.api.nvim_set_current_buf(fixed)
    vim.api.nvim_win_set_cursor(0, { bratu_pos.line + 1, bratu_pos.character })
    vim.lsp.buf.code_action({
      apply = true,
      filter = function(a)
        return a.title == 'Generate adjoint of bratu'
      end,
    })
    local done = vim.wait(request_timeout_ms, function()
      return file_exists(adjoint) and vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':t') == 'p000_bratu_b.f90'
    end, 50)
    assert(done, 'the adjoint was not written and shown (current buffer: ' .. vim.api.nvim_buf_get_name(0) .. ')')
    assert((read_file(adjoint) or ''):lower():find('subroutine%s+bratu_b'), 'p000_bratu_b.f90 has no subroutine bratu_b')
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].modified then
        error('buffer ' .. vim.api.nvim_buf_get_name(b) .. ' is left modified')
      end
    end
  end)

  report.step('verify tbr_fig1', function()
    local text, err, raw = dfort.verify(free, { position = fig1_pos, timeout = 40000 })
    assert(text, err)
    report.info('verify result', text)
    assert(text:find('tbr_fig1', 1, true), 'the result does not name tbr_fig1')
    assert(not (type(raw) == 'table' and raw.ok == false), 'verification failed')
  end)

  report.step('verify bratu asks for its values', function()
    -- Bratu's integer arguments have no values: the plugin asks for them
    -- (vim.ui.input), the server keeps them in dfort.toml, the check runs.
    local input, prompts = vim.ui.input, {}
    local answers = { '12', '2' }
    vim.ui.input = function(opts, on_confirm)
      table.insert(prompts, opts.prompt)
      on_confirm(table.remove(answers, 1))
    end
    local ok, text, err, raw = pcall(dfort.verify, fixed, { position = bratu_pos, timeout = 60000 })
    vim.ui.input = input
    assert(ok, text)
    assert(text, err)
    report.info('prompts', table.concat(prompts, ' | '))
    assert(#prompts == 2 and prompts[1]:find('`dim`', 1, true) and prompts[2]:find('`parmax`', 1, true), 'asked: ' .. table.concat(prompts, ' | '))
    assert(prompts[1]:find('dfort.toml', 1, true), 'the prompt does not say where the value is kept: ' .. prompts[1])
    local toml = read_file(dir .. '/dfort.toml') or ''
    assert(toml == '[[root]]\nname = "bratu"\nint = { dim = 12, parmax = 2 }\n', 'dfort.toml: ' .. toml)
    assert(type(raw) == 'table' and raw.ok == true, 'verification failed: ' .. text)
    assert(dfort.parse_value({ key = 'int', form = '[V1,V2,...]' }, '[1, 2,3]')[3] == 3, 'an integer list')
    assert(dfort.parse_value({ key = 'int', form = 'VALUE' }, 'twelve') == nil, '"twelve" read as an integer')
    assert(dfort.parse_value({ key = 'logical', form = 'true|false' }, '.false.') == false, '.false.')
  end)

  -- The user commands act at the cursor.
  local function put_cursor(bufnr, pos)
    vim.api.nvim_set_current_buf(bufnr)
    vim.api.nvim_win_set_cursor(0, { pos.line + 1, pos.character })
  end

  report.step(':DfortTangent at the cursor', function()
    put_cursor(fixed, bratu_pos)
    vim.cmd('DfortTangent')
    local tangent = dir .. '/p000_bratu_d.f90'
    assert(file_exists(tangent), tangent .. ' was not written')
    assert((read_file(tangent) or ''):lower():find('subroutine%s+bratu_d'), 'p000_bratu_d.f90 has no subroutine bratu_d')
  end)

  -- Address recovery (paper 003) on ICCG: the information diagnostic the
  -- server publishes for `ii`, and the inlay hints (requested directly:
  -- Neovim shows them from 0.10 on).
  local iccg
  report.step('open iccg', function()
    iccg = open('p003_fig14a_iccg.f90')
    local client, err = dfort.client(iccg, request_timeout_ms)
    assert(client, err)
  end)
  report.step('address diagnostic in iccg', function()
    local expected = 'index ii cannot be recovered by inversion: integer division at line 20; it is stored each iteration'
    local found
    vim.wait(request_timeout_ms, function()
      for _, d in ipairs(vim.diagnostic.get(iccg)) do
        if d.message == expected then
          found = d
          return true
        end
      end
      return false
    end, 50)
    local all = {}
    for _, d in ipairs(vim.diagnostic.get(iccg)) do
      table.insert(all, (d.lnum + 1) .. ': ' .. d.message)
    end
    report.info('iccg diagnostics', table.concat(all, '\n'))
    assert(found, 'no diagnostic "' .. expected .. '"')
    assert(found.severity == vim.diagnostic.severity.INFO, 'severity ' .. tostring(found.severity) .. ', not INFO')
    assert(found.lnum == 19, 'on line ' .. (found.lnum + 1) .. ', not 20')
  end)
  report.step('address inlay hints in iccg', function()
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(iccg) },
      range = { start = { line = 0, character = 0 }, ['end'] = { line = 999, character = 0 } },
    }
    local responses, err = vim.lsp.buf_request_sync(iccg, 'textDocument/inlayHint', params, request_timeout_ms)
    assert(responses, 'inlayHint: ' .. tostring(err))
    local labels = {}
    for _, resp in pairs(responses) do
      assert(not (resp.err or resp.error), 'inlayHint error: ' .. vim.inspect(resp.err or resp.error))
      for _, h in ipairs(resp.result or {}) do
        local label = type(h.label) == 'string' and h.label or ''
        labels[label] = h.position.line + 1
      end
    end
    local shown = {}
    for l, line in pairs(labels) do
      table.insert(shown, line .. ': ' .. l)
    end
    table.sort(shown)
    report.info('iccg inlay hints', table.concat(shown, '\n'))
    assert(labels['ii stored: integer division'] == 20, 'no "ii stored: integer division" on line 20')
    assert(labels['ipntp ← ipntp - ii'] == 17, 'no "ipntp ← ipntp - ii" on line 17')
  end)

  -- Issue 18: the lines an `#if` leaves out are drawn with DfortInactive
  -- (extmarks), not shown as diagnostics.
  report.step('inactive #if region drawn faded', function()
    local buf = open('inactive.F')
    local client, err = dfort.client(buf, request_timeout_ms)
    assert(client, err)
    local ns = dfort.inactive_namespace
    local marks = {}
    vim.wait(request_timeout_ms, function()
      marks = vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
      return #marks > 0
    end, 50)
    local lines = {}
    for _, m in ipairs(marks) do
      assert(m[4].hl_group == 'DfortInactive', 'highlight ' .. tostring(m[4].hl_group))
      table.insert(lines, m[2] + 1)
    end
    table.sort(lines)
    report.info('inactive lines of inactive.F', table.concat(lines, ', '))
    assert(table.concat(lines, ',') == '7,8', 'inactive lines ' .. table.concat(lines, ',') .. ', not 7,8')
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      assert(d.code ~= 'inactive-region', 'an inactive region shown as a diagnostic on line ' .. (d.lnum + 1))
    end
  end)

  report.step(':DfortMarkIndependent at the cursor', function()
    put_cursor(free, fig1_pos)
    -- `a` is a local of tbr_fig1 that is not marked yet.
    local a_pos = find_position(free, 'x(j) = j*cos(x(j)) + a', ' a', 1)
    a_pos.character = a_pos.character + 1
    put_cursor(free, a_pos)
    vim.cmd('DfortMarkIndependent')
    -- A new `!$ad independent(a)` line, or `a` added to the directive there.
    local found
    for _, line in ipairs(vim.api.nvim_buf_get_lines(free, 0, -1, false)) do
      local args = line:lower():match('^%s*!%$ad%s+independent%s*%((.-)%)')
      if args and (',' .. args:gsub('%s', '') .. ','):find(',a,', 1, true) then
        found = line
      end
    end
    assert(found, 'no `!$ad independent(...)` naming `a` in p000_fig1.f90 after :DfortMarkIndependent')
    report.info('directive after :DfortMarkIndependent', found)
  end)
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    -- Leave the autocommand first so that :edit fires BufRead/FileType.
    vim.schedule(function()
      local ok, err = xpcall(run, debug.traceback)
      if not ok then
        report.fail('test driver', err)
      end
      pcall(function()
        require('dfort').stop(3000)
      end)
      timer:stop()
      report.finish(false)
    end)
  end,
})
