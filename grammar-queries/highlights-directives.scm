; extends
; `!$ad` and `!$openad` directives (independent, dependent, ...) inside
; comments: captured
; apart from ordinary comments so editors can colour them as directives.
; Neovim loads this file from the dfort plugin's runtimepath
; (editors/neovim/queries/fortran/highlights.scm links here); the first line
; makes it extend the Fortran highlights instead of replacing them.
((comment) @keyword.directive
 (#match? @keyword.directive "^![$][aA][dD][ \t]"))
((comment) @keyword.directive
 (#match? @keyword.directive "^![$][oO][pP][eE][nN][aA][dD][ \t]"))
