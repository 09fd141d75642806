package names

import (
	"go/token"
	"strings"
	"testing"
	"unicode"
)

// namesSeeds are names from schemas, ordinary and hostile.
var namesSeeds = []string{
	"catalogue.import-completed", "catalogue_id", "HTTPServer", "image_urls", "3d", "größe", "ǅungla",
	"", " ", "_", "-1", "+", "type", "func", "string", "Ⅻ", "ß", "ĸ", "ʰello", "٣abc", "a\u0301b",
	"\xff\xfe", "a\x00b", "*/ func Evil() {} /*", "a\nb", "İstanbul", "ﬃ", "ΣΑΣ", "ᾼ", "𝔄𝔅", "0x1F",
}

// FuzzNames checks that every name-making function turns any input into a
// usable exported Go identifier (or "" where documented), and File into a
// file name the go tool reads.
func FuzzNames(f *testing.F) {
	for _, s := range namesSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range Words(s) {
			if w == "" || strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
				t.Errorf("Words(%q) has word %q", s, w)
			}
		}
		if c := Camel(s); c != "" && !token.IsIdentifier("X"+c) {
			t.Errorf("Camel(%q) = %q, which cannot follow a prefix in an identifier", s, c)
		}
		mayBeEmpty := map[string]string{
			"Exported":  Exported(s),
			"Type":      Type(s),
			"Field":     Field(s),
			"EnumValue": EnumValue("T", s),
		}
		for fn, got := range mayBeEmpty {
			if got != "" {
				checkIdent(t, fn, s, got)
			}
		}
		if Exported(s) == "" && strings.ContainsFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			t.Errorf("Exported(%q) = \"\", but the input has a letter or digit", s)
		}
		exported := Exported(s)
		for fn, got := range map[string]string{
			"Handler":             Handler(s),
			"ConsumerConstructor": ConsumerConstructor(s),
			"Method":              Method(exported),
			"Publish":             Publish(exported),
			"FactVar":             FactVar(exported),
			"RoutingKeyConst":     RoutingKeyConst("T" + exported),
			"DefaultConst":        DefaultConst("T", exported),
		} {
			checkIdent(t, fn, s, got)
		}
		if CheckPackage(s) == "" && (!token.IsIdentifier(s) || IsReserved(s)) {
			t.Errorf("CheckPackage(%q) accepts a name that is not a usable identifier", s)
		}
		checkFile(t, s, File(s))
	})
}

func checkIdent(t *testing.T, fn, in, got string) {
	t.Helper()
	switch {
	case !token.IsIdentifier(got): // also rules out keywords
		t.Errorf("%s(%q) = %q: not a Go identifier", fn, in, got)
	case !token.IsExported(got):
		t.Errorf("%s(%q) = %q: not exported", fn, in, got)
	case IsReserved(got):
		t.Errorf("%s(%q) = %q: a predeclared identifier", fn, in, got)
	}
}

// checkFile checks that a generated file name is one the go tool builds:
// it ends in .go but not _test.go or a GOOS/GOARCH suffix, does not start
// with '_' or '.', and holds no path separator.
func checkFile(t *testing.T, in, name string) {
	t.Helper()
	switch {
	case !strings.HasSuffix(name, ".json.go"):
		t.Errorf("File(%q) = %q: want the suffix .json.go", in, name)
	case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "."):
		t.Errorf("File(%q) = %q: the go tool ignores it", in, name)
	case strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_')
	}):
		t.Errorf("File(%q) = %q: a character other than a-z, 0-9, '-', '.' and '_'", in, name)
	}
}
