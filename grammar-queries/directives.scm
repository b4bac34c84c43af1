; Comments that may hold `!$ad` directives (independent, dependent, ...).
; The lowering keeps those whose text starts with `!$ad` and attaches each to
; the innermost program unit that contains it.
((comment) @directive
 (#match? @directive "^![$][aA][dD][ \t]"))
