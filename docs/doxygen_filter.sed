# Doxygen INPUT_FILTER for include/stackcap.h (sed -E).  The header uses
# plain C comments; this turns them into documentation comments on the fly
# (the header itself is not changed):
# - the file's opening comment documents the file (@file);
# - a comment that starts in column 0 documents the declaration below it,
#   except the "/* ----" section banners;
# - a comment after code on the same line documents that member (/**<),
#   except after preprocessor conditionals (#endif /* ... */);
# - in a comment line, "#if" and "<running>" are plain text, not a link
#   request nor an HTML tag: they are escaped (\#if, \<running\>), unless a
#   backtick opens them (`#if` is code already).
1s,^/\*$,/** @file,
/^\/\* -{3}/!s,^/\*( |$),/**\1,
/^[[:space:]]*([*\/]|#[[:space:]]*(if|else|elif|endif))/!s,([^[:space:]])([[:space:]]+)/\* ,\1\2/**< ,
/^[[:space:]]*(\/\*|\*)/{
	s,([^[:alnum:]_\\`])#([[:alpha:]]),\1\\#\2,g
	s,([^`])<([[:alpha:]][[:alnum:]_-]*)>,\1\\<\2\\>,g
}
