package load

import (
	"strconv"
	"strings"
)

// Pointer joins reference tokens into an RFC 6901 JSON pointer, escaping
// '~' and '/'. Pointer() is "", the whole document.
func Pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

// Append returns pointer extended by one reference token (a property name or
// an array index).
func Append(pointer string, token string) string {
	return pointer + "/" + escapeToken(token)
}

// AppendIndex returns pointer extended by an array index.
func AppendIndex(pointer string, i int) string {
	return pointer + "/" + strconv.Itoa(i)
}

// Tokens splits a JSON pointer into its unescaped reference tokens. It
// returns false if pointer is neither "" nor starts with '/'.
func Tokens(pointer string) ([]string, bool) {
	if pointer == "" {
		return nil, true
	}
	if pointer[0] != '/' {
		return nil, false
	}
	parts := strings.Split(pointer[1:], "/")
	for i, p := range parts {
		parts[i] = unescapeToken(p)
	}
	return parts, true
}

// Lookup finds the value that pointer designates inside a decoded JSON
// value (as produced by this package: map[string]any, []any and scalars).
func Lookup(v any, pointer string) (any, bool) {
	tokens, ok := Tokens(pointer)
	if !ok {
		return nil, false
	}
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			v, ok = x[t]
			if !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != t {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func escapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

func unescapeToken(t string) string {
	if !strings.Contains(t, "~") {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}
