package codec

// The formats most facts assert (date-time, email, uuid and date, time)
// are accepted here without the reference's check, which splits the
// string and boxes it into an interface, allocating each time. Each
// function below accepts only strings the reference accepts, and accepts
// the ordinary ones; whatever it does not accept (a leap second, a quoted
// local part, an IP address for a domain, a malformed value) goes to the
// reference, which decides and says why. The tests hold each to that
// against the reference on generated and hand-picked strings.

// natives are the fast acceptances by format name.
var natives = map[string]func(string) bool{
	"uuid":      isUUID,
	"date-time": isDateTime,
	"date":      isDate,
	"time":      isTime,
	"email":     isEmail,
}

// isUUID reports whether s is five groups of 8, 4, 4, 4 and 12 hex
// digits joined by hyphens: what the reference's uuid check accepts,
// without splitting the string.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// digits returns the decimal value of s[i:i+n], all ASCII digits, and
// whether they were.
func digits(s string, i, n int) (int, bool) {
	v := 0
	for _, c := range []byte(s[i : i+n]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// isDate accepts yyyy-mm-dd with a day that its month has, as the
// reference's time.Parse("2006-01-02") does.
func isDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	y, ok1 := digits(s, 0, 4)
	m, ok2 := digits(s, 5, 2)
	d, ok3 := digits(s, 8, 2)
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return false
	}
	return d <= daysIn(m, y)
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// isTime accepts hh:mm:ss, an optional fraction of one or more digits,
// and Z, z or an offset ±hh:mm, with hours up to 23, minutes and seconds
// up to 59: a leap second (60) goes to the reference, which checks it
// against the offset.
func isTime(s string) bool {
	if len(s) < 9 || s[2] != ':' || s[5] != ':' {
		return false
	}
	h, ok1 := digits(s, 0, 2)
	m, ok2 := digits(s, 3, 2)
	sec, ok3 := digits(s, 6, 2)
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 59 {
		return false
	}
	rest := s[8:]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case rest == "Z" || rest == "z":
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		zh, ok1 := digits(rest, 1, 2)
		zm, ok2 := digits(rest, 4, 2)
		return ok1 && ok2 && zh <= 23 && zm <= 59
	}
	return false
}

// isDateTime accepts a date, T or t, and a time, as the reference does.
func isDateTime(s string) bool {
	return len(s) >= 20 && (s[10] == 'T' || s[10] == 't') && isDate(s[:10]) && isTime(s[11:])
}

// isEmail accepts local@domain of at most 254 bytes: a local part of 1
// to 64 of the characters an unquoted one may have, dots neither first,
// last nor doubled, and a domain that is a host name (labels of 1 to 63
// letters, digits and hyphens, no hyphen first or last, 253 bytes at most
// without a trailing dot). A quoted local part and an address literal go
// to the reference.
func isEmail(s string) bool {
	if len(s) > 254 {
		return false
	}
	at := -1
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '@' {
			at = i
			break
		}
	}
	if at < 1 || at > 64 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	if local[0] == '.' || local[len(local)-1] == '.' {
		return false
	}
	for i := 0; i < len(local); i++ {
		c := local[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.':
			if local[i+1] == '.' { // not last: checked above
				return false
			}
		case atextPunct[c]:
		default:
			return false
		}
	}
	return isHostname(domain)
}

// atextPunct are the marks an unquoted local part may hold besides dots.
var atextPunct = func() (t [256]bool) {
	for _, c := range []byte("!#$%&'*+-/=?^_`{|}~") {
		t[c] = true
	}
	return t
}()

// isHostname accepts what the reference's hostname check does: one
// trailing dot dropped, at most 253 bytes, labels of 1 to 63 ASCII
// letters, digits and hyphens that neither start nor end with a hyphen.
func isHostname(s string) bool {
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	if len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		label := s[start:i]
		if len(label) < 1 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}
