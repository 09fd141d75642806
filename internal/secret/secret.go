// Package secret keeps passwords out of everything warren prints: log
// records, errors, x-failure headers and command output.
//
// Redaction works on the structure of a URL, not on the password's text:
// the user information of a URL runs from after "scheme://" to the last
// "@" of the URL, and everything after its first ":" is the password. That
// holds for URLs that net/url refuses (a password with an unescaped / ? #
// @ or %), for IPv6 hosts and for several URLs in one text, and it never
// touches text outside a URL's password: a short password that also occurs
// in other words, or a user name equal to the password, stays readable.
package secret

import "strings"

// Mask replaces a password.
const Mask = "xxxxx"

// URL returns raw with its password replaced by [Mask]. Anything that is
// not a URL with a password is returned as it is.
func URL(raw string) string {
	rest, start := raw, 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + len("://")
		rest = raw[start:]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return raw
	}
	colon := strings.IndexByte(rest[:at], ':')
	if colon < 0 {
		return raw // a user name without a password
	}
	return raw[:start+colon+1] + Mask + rest[at:]
}

// Text returns s with the password of every URL in it replaced by [Mask],
// and the value of every password keyword: PostgreSQL's key/value
// connection strings ("host=db password=pw") and a URL's query
// ("?password=pw"). A URL in text ends at white space, a quote or an angle
// bracket, or where the next URL begins.
func Text(s string) string { return keywords(urls(s)) }

// urls redacts the password of every URL in s.
func urls(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is written
	for from := 0; ; {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			break
		}
		begin := schemeStart(s, from+i)
		end := urlEnd(s, from+i+len("://"))
		b.WriteString(s[done:begin])
		b.WriteString(URL(s[begin:end]))
		done, from = end, end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// keywords redacts the value of each "password=" that starts s, a word
// or a URL query parameter: up to white space, "&" or ";", or, quoted
// with ' as libpq allows, to the closing quote.
func keywords(s string) string {
	const key = "password="
	lower := strings.ToLower(s)
	if !strings.Contains(lower, key) {
		return s
	}
	var b strings.Builder
	done := 0
	for from := 0; ; {
		i := strings.Index(lower[from:], key)
		if i < 0 {
			break
		}
		at := from + i
		from = at + len(key)
		if at > 0 && !strings.ContainsRune(" \t\r\n?&;\"'(,", rune(s[at-1])) {
			continue // part of another word: "oldpassword="
		}
		end := from
		if end < len(s) && s[end] == '\'' {
			end++
			for end < len(s) && s[end] != '\'' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			end = min(end+1, len(s))
		} else {
			for end < len(s) && !strings.ContainsRune(" \t\r\n&;\"", rune(s[end])) {
				end++
			}
		}
		if end == from {
			continue // nothing to hide
		}
		b.WriteString(s[done:from])
		b.WriteString(Mask)
		done, from = end, end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// schemeStart returns where the scheme that ends at sep (the index of
// "://") begins.
func schemeStart(s string, sep int) int {
	i := sep
	for i > 0 && isSchemeByte(s[i-1]) {
		i--
	}
	return i
}

// urlEnd returns where the URL whose authority starts at from ends.
func urlEnd(s string, from int) int {
	end := len(s)
	if i := strings.IndexAny(s[from:], " \t\r\n\"'`<>"); i >= 0 {
		end = from + i
	}
	if i := strings.Index(s[from:end], "://"); i >= 0 {
		end = schemeStart(s, from+i)
	}
	return end
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// Error wraps err so that its text has every URL's password replaced by
// [Mask]; errors.Is and errors.As still see the chain. Error(nil) is nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*redacted); ok {
		return err
	}
	return &redacted{err}
}

type redacted struct{ err error }

func (e *redacted) Error() string { return Text(e.err.Error()) }
func (e *redacted) Unwrap() error { return e.err }
