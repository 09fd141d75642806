package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
)

// A value built in Go may hold what its JSON cannot: a string or a member
// name that is not UTF-8 (JSON text is Unicode, and a consumer refuses a
// body that is not), a NaN or an infinity (JSON has no such numbers: the
// writer would put null), a time.Time whose year has more or fewer than
// four digits (RFC 3339 has no other), a json.RawMessage whose bytes are
// no JSON (the writer copies them). The checks of this file refuse
// them, so that Validate, which Publish runs, refuses a value that would
// not be written faithfully. They look at the Go value, not at the JSON
// written: utf8.ValidString and a comparison or two, nothing encoded.
//
// A time.Time whose zone offset RFC 3339 cannot write (one with seconds,
// as local mean time has, or of a day or more) is not refused: WriteTime
// writes it in UTC, the same instant.
//
// The rules of a value (String, Float, Any) make the same checks;
// generated code calls these functions for a value without a rule.

// (Each check makes its error out of line, in a function of its own,
// which keeps the check small: CheckFloat is inlined where it is called.)

// CheckText checks that s is valid UTF-8.
func CheckText(s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	return errText(s)
}

func errText(s string) error { return Expect("a string of valid UTF-8, got " + invalidByte(s)) }

// CheckRaw checks that raw, JSON built in Go, is one JSON value in valid
// UTF-8. The encoder writes a json.RawMessage as it is, so bytes that are
// no JSON (a string's text without its quotes, two values, nothing at
// all) would make a body every consumer refuses. nil is written as null
// and passes.
func CheckRaw(raw json.RawMessage) error {
	if raw == nil || utf8.Valid(raw) && json.Valid(raw) {
		return nil
	}
	return errRaw(raw)
}

func errRaw(raw json.RawMessage) error {
	if err := checkUTF8(raw); err != nil {
		return err
	}
	if len(bytes.TrimLeft(raw, " \t\r\n")) == 0 {
		return Expect("JSON text, got nothing; a json.RawMessage is written as it is, and nil as null")
	}
	// encoding/json says what is wrong and where; Valid said only that.
	err := json.Unmarshal(raw, new(json.RawMessage))
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		return Expect("JSON text")
	}
	return &Error{Expected: "JSON text, got " + syntax.Error() + " (byte " + strconv.FormatInt(syntax.Offset, 10) + " of " + strconv.Itoa(len(raw)) + "); a json.RawMessage is written as it is", Err: err}
}

// checkUTF8 checks that b, JSON written from a value built in Go, is valid
// UTF-8: the values it was written from were checked to be JSON.
func checkUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	return Expect("JSON text of valid UTF-8, got " + invalidByte(string(b)))
}

// CheckFloat checks that f is a number JSON can hold: neither NaN nor an
// infinity.
func CheckFloat(f float64) error {
	if f-f == 0 { // NaN and the infinities give NaN
		return nil
	}
	return errFloat(f)
}

func errFloat(f float64) error {
	return Expect("a finite number, got " + strconv.FormatFloat(f, 'g', -1, 64))
}

// CheckTime checks that t, as [WriteTime] writes it, has a year RFC 3339
// can write: 0000 to 9999.
func CheckTime(t time.Time) error {
	// A time more than a day inside the range is in it whatever its zone
	// (WriteTime writes an offset of less than a day): two comparisons,
	// no calendar.
	if u := t.Unix(); u > unixYear0+secondsPerDay && u < unixYear10000-secondsPerDay {
		return nil
	}
	return checkYear(t)
}

func checkYear(t time.Time) error {
	if y := written(t).Year(); y < 0 || y > 9999 {
		return Expect("a date-time in the years 0000 to 9999 (RFC 3339), got the year " + strconv.Itoa(y))
	}
	return nil
}

// The Unix times of 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z.
var (
	unixYear0     = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	unixYear10000 = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

const secondsPerDay = 24 * 60 * 60

// CheckNames checks that the keys of m, a map built in Go written as the
// members of an object, are valid UTF-8. The error is the object's: the
// name it cannot write is not a pointer to anything.
func CheckNames[T any](m map[string]T) error {
	for k := range m {
		if err := checkName(k); err != nil {
			return err
		}
	}
	return nil
}

func checkName(k string) error {
	if utf8.ValidString(k) {
		return nil
	}
	return errName(k)
}

func errName(k string) error {
	return Expect("property names of valid UTF-8, got " + strconv.Quote(k) + " (" + invalidByte(k) + ")")
}

// invalidByte says where s is first not UTF-8, as the runtime does of a
// body that is not.
func invalidByte(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		i += n
	}
	if i >= len(s) {
		return "invalid UTF-8"
	}
	return "invalid byte 0x" + strconv.FormatUint(uint64(s[i]), 16) + " at offset " + strconv.Itoa(i)
}

// written is t as WriteTime writes it: in its own zone when RFC 3339 can
// write the offset (whole minutes, less than a day either way), else in
// UTC, so that the text read back is the same instant.
func written(t time.Time) time.Time {
	if t.Location() == time.UTC {
		return t
	}
	if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		return t.UTC()
	}
	return t
}
