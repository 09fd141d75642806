package load

import (
	"encoding/json"
	"strings"
	"testing"
)

const sample = `{
  "type": "object",
  "properties": {
    "sku": {"type": "string"},
    "a/b~c": [1, {"x": true}]
  }
}
`

func TestPositions(t *testing.T) {
	d, err := Parse("x.json", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pointer   string
		line, col int
		keyLine   int
		keyCol    int
	}{
		{"", 1, 1, 1, 1},
		{"/type", 2, 11, 2, 3},
		{"/properties/sku", 4, 12, 4, 5},
		{"/properties/sku/type", 4, 21, 4, 13},
		{"/properties/a~1b~0c/0", 5, 15, 5, 15},
		{"/properties/a~1b~0c/1/x", 5, 24, 5, 19},
	}
	for _, tt := range tests {
		line, col, ok := d.Position(tt.pointer)
		if !ok || line != tt.line || col != tt.col {
			t.Errorf("Position(%q) = %d:%d %v, want %d:%d", tt.pointer, line, col, ok, tt.line, tt.col)
		}
		line, col, _ = d.KeyPosition(tt.pointer)
		if line != tt.keyLine || col != tt.keyCol {
			t.Errorf("KeyPosition(%q) = %d:%d, want %d:%d", tt.pointer, line, col, tt.keyLine, tt.keyCol)
		}
	}
	// A missing pointer falls back to its nearest ancestor.
	if line, col, ok := d.Position("/properties/sku/missing"); ok || line != 4 || col != 12 {
		t.Errorf("Position(missing) = %d:%d %v, want 4:12 false", line, col, ok)
	}
	if got := d.Keys("/properties"); len(got) != 2 || got[0] != "sku" || got[1] != "a/b~c" {
		t.Errorf("Keys = %q, want file order [sku a/b~c]", got)
	}
	if d.Offset("/type") != 12 || d.Offset("/missing") != -1 {
		t.Errorf("Offset = %d, %d", d.Offset("/type"), d.Offset("/missing"))
	}
	v, ok := d.Lookup("/properties/a~1b~0c/0")
	if !ok || v != json.Number("1") {
		t.Errorf("Lookup = %v %v, want json.Number 1", v, ok)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"{\n  \"a\": 1,\n  \"b\": tru\n}", "x.json:3:11: invalid JSON: invalid character"},
		{"{\n  \"a\": 1,\n}", "x.json:2:9: invalid JSON: trailing comma before '}' (JSON allows no comma after the last element)"},
		{"[1, 2 ,\t]", "x.json:1:7: invalid JSON: trailing comma before ']' (JSON allows no comma after the last element)"},
		{"{\"a\": [1,], \"b\": 2}", "x.json:1:9: invalid JSON: trailing comma before ']'"},
		{"{\"a\": }", "x.json:1:7: invalid JSON: invalid character '}' looking for beginning of value"},
		{"{\"a\": 1", "x.json:1:8: invalid JSON: unexpected end of file"},
		{"{\"a\": 1, \"a\": 2}", "x.json:1:10: /a: duplicate property \"a\""},
		{"{} {}", "x.json:1:4: invalid JSON: unexpected data after the top-level value"},
		// Separators after the value are data too; they were once skipped.
		{"{},", "x.json:1:3: invalid JSON: unexpected data after the top-level value"},
		{"{}\n:", "x.json:2:1: invalid JSON: unexpected data after the top-level value"},
		{"", "x.json:1:1: invalid JSON: unexpected end of file"},
		// A byte order mark is named, not reported as the character 'ï'.
		{"\xef\xbb\xbf{}", "x.json:1:1: invalid JSON: the file starts with a UTF-8 byte order mark (EF BB BF), which a JSON file must not have (RFC 8259, section 8.1): save it as UTF-8 without one"},
		{"\xff\xfe{\x00}\x00", "x.json:1:1: invalid JSON: the file starts with a UTF-16 byte order mark, and a JSON file must be UTF-8 without one (RFC 8259, section 8.1): save it as UTF-8"},
		{"\xfe\xff\x00{\x00}", "x.json:1:1: invalid JSON: the file starts with a UTF-16 byte order mark"},
		{"[\"\x01\"]", "x.json:1:3: invalid JSON: invalid character '\\x01' in string literal"},
		{"[01]", "x.json:1:3: invalid JSON: invalid character '1' after array element"},
		// Nesting is bounded, so hostile input cannot exhaust the stack.
		{strings.Repeat("[", maxDepth+1), "x.json:1:1001: arrays and objects nested more than 1000 deep"},
	}
	for _, tt := range tests {
		_, err := Parse("x.json", []byte(tt.src))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Parse(%.40q) error = %v, want prefix %q", tt.src, err, tt.want)
		}
	}
}
