package codec

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime/schemaset"
)

// nativeCases are, per format, strings the native check must accept
// (the reference accepts them too: checked below) and strings at the
// edges, accepted or refused by the reference, that it must either refuse
// or agree on.
var nativeCases = map[string]struct{ accept, edge []string }{
	"date-time": {
		accept: []string{
			"2026-12-01T12:00:00Z", "2026-12-01t12:00:00z", "1985-04-12T23:20:50.52Z",
			"1996-12-19T16:39:57-08:00", "1990-12-31T15:59:59.123456789+23:59",
			"2024-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "0000-02-29T00:00:00Z", "2026-12-01T12:00:00.0+00:00",
		},
		edge: []string{
			"1990-12-31T23:59:60Z", "1990-12-31T15:59:60-08:00", "1990-12-31T15:59:60+08:00", "2026-12-01T12:59:60Z",
			"2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
			"2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z", "2026-12-01 12:00:00Z", "2026-12-01T24:00:00Z",
			"2026-12-01T12:60:00Z", "2026-12-01T12:00:00", "2026-12-01T12:00:00.Z", "2026-12-01T12:00:00+0100",
			"2026-12-01T12:00:00+24:00", "2026-12-01T12:00:00+01:60", "2026-12-01T1:00:00Z", "+2026-1-01T12:00:00Z",
			"2026-12-01T+1:00:00Z", "2026-12-01T12:+1:00Z", "2026-12-01T12:00:00+-1:00", "2026-12-01T12:00:00+01:+1",
			"２026-12-01T12:00:00Z", "2026-12-01T12:00:00.１Z", "", "2026-12-01T12:00:00ZZ", "2026-12-01T12:00:00+01:00Z",
		},
	},
	"date": {
		accept: []string{"2026-12-01", "2024-02-29", "0001-01-01", "9999-12-31"},
		edge:   []string{"2026-2-01", "2026-02-30", "2100-02-29", "2026-12-1", "20261201", "2026-12-01T", "2026/12/01", "-026-12-01"},
	},
	"time": {
		accept: []string{"12:00:00Z", "23:59:59.999+05:30", "00:00:00-23:59", "08:30:06z"},
		edge:   []string{"23:59:60Z", "15:59:60-08:00", "12:00:00", "12:00Z", "12:00:00+05", "1:00:00Z", "12:00:00.+01:00"},
	},
	"email": {
		accept: []string{
			"ada.lovelace@example.com", "a@b", "joe.bloggs+tag@sub.example.co.uk", "x!#$%&'*+-/=?^_`{|}~@example.com",
			"a@example.com.", "user@xn--80ak6aa92e.com", "a@a-b.c", strings.Repeat("a", 64) + "@example.com",
		},
		edge: []string{
			"@example.com", ".a@example.com", "a.@example.com", "a..b@example.com", `"joe bloggs"@example.com`,
			`"a\b"@example.com`, "a@[127.0.0.1]", "a@[IPv6:::1]", "a@[300.0.0.1]", "a@-example.com", "a@example-.com",
			"a@exa_mple.com", "a@", "a@.", "a@..", "a@example..com", "a b@example.com", "é@example.com", "a@é.com",
			strings.Repeat("a", 65) + "@example.com", "a@" + strings.Repeat("b", 64) + ".com",
			"a@" + strings.Repeat("b.", 126) + "c", "a@" + strings.Repeat("b.", 127) + "c", "a@" + strings.Repeat("b.", 126) + "cc.",
			strings.Repeat("a", 64) + "@" + strings.Repeat("b.", 94) + "c", "", "plain", "a@b@", "first@second@example.com",
		},
	},
	"uuid": {
		accept: []string{"123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000"},
		edge:   []string{"123e4567e89b-12d3-a456-426614174000-", "123e4567-e89b-12d3-a456-42661417400g", ""},
	},
}

// A native check accepts only what the reference accepts, and accepts
// the ordinary values: what it leaves, the reference decides.
func TestNativeFormatsAgreeWithTheReference(t *testing.T) {
	for name, cases := range nativeCases {
		native, ref := natives[name], schemaset.FormatChecker(name)
		if native == nil {
			t.Fatalf("%s: no native check", name)
		}
		for _, s := range cases.accept {
			if err := ref(s); err != nil {
				t.Errorf("%s %q: the reference refuses it (%v); fix the case", name, s, err)
			}
			if !native(s) {
				t.Errorf("%s %q: left to the reference", name, s)
			}
		}
		for _, s := range cases.edge {
			if native(s) && ref(s) != nil {
				t.Errorf("%s %q: accepted, the reference refuses it: %v", name, s, ref(s))
			}
			f := FormatOf(name)
			if got, want := f.Check(s) == nil, ref(s) == nil; got != want {
				t.Errorf("%s %q: Check accepts %v, the reference %v", name, s, got, want)
			}
		}
	}
}

// Mutations of valid values never make a native check accept what the
// reference refuses.
func TestNativeFormatsNeverAcceptWhatTheReferenceRefuses(t *testing.T) {
	alphabet := []byte("0123456789-:.TtZz+@aA_!\"[]é ")
	rng := rand.New(rand.NewPCG(5, 6))
	for name, cases := range nativeCases {
		native, ref := natives[name], schemaset.FormatChecker(name)
		taken := 0
		for range 30000 {
			b := []byte(cases.accept[rng.IntN(len(cases.accept))])
			for range 1 + rng.IntN(3) {
				switch i := rng.IntN(len(b) + 1); rng.IntN(3) {
				case 0:
					if i < len(b) {
						b[i] = alphabet[rng.IntN(len(alphabet))]
					}
				case 1:
					b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
				default:
					if i < len(b) {
						b = append(b[:i], b[i+1:]...)
					}
				}
			}
			s := string(b)
			if native(s) {
				taken++
				if err := ref(s); err != nil {
					t.Fatalf("%s %q: accepted, the reference refuses it: %v", name, s, err)
				}
			}
		}
		if taken == 0 {
			t.Errorf("%s: no mutation accepted; the test checks nothing", name)
		}
	}
}

// The formats with a native check decode without allocating for it.
func TestNativeFormatsDoNotAllocate(t *testing.T) {
	for name, cases := range nativeCases {
		f := FormatOf(name)
		s := cases.accept[0]
		if n := testing.AllocsPerRun(100, func() {
			if f.Check(s) != nil {
				t.Fatal("refused")
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per check", name, n)
		}
	}
}
