; Comments that may hold AD directives: dfort's and Tapenade's `!$ad ...`,
; OpenAD's `!$openad ...` (fixed form `c$openad` reaches the parser as
; `!$openad`). The lowering reads roles from them, warns about the ones
; it ignores, and attaches each role to the innermost program unit that
; contains it. (No alternation in the patterns: Neovim's regexes differ.)
((comment) @directive
 (#match? @directive "^![$][aA][dD][ \t]"))
((comment) @directive
 (#match? @directive "^![$][oO][pP][eE][nN][aA][dD][ \t]"))
