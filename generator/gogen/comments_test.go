package gogen

import (
	"fmt"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"
)

// TestDocCommentCannotEscape renders hostile schema text as a doc comment
// and checks that the result parses as Go with the text inside comments
// only: no declaration leaks out, no directive is formed.
func TestDocCommentCannotEscape(t *testing.T) {
	hostile := []string{
		"*/ func Evil() {} /*",
		"line\nfunc Evil() {}",
		"cr\rfunc Evil() {}",
		"crlf\r\nfunc Evil() {}",
		"ls\u2028func Evil() {}",
		"ps\u2029func Evil() {}",
		"nel\u0085func Evil() {}",
		"vt\vfunc Evil() {}",
		"ff\ffunc Evil() {}",
		"//go:generate rm -rf /",
		"\n//go:build ignore\n",
		"bom \ufeff inside",
		"nul \x00 byte",
		"bad utf8 \xff\xfe",
		"`backquote` and \"quotes\"",
	}
	for _, text := range hostile {
		f := jen.NewFile("p")
		for _, c := range docComment(text) {
			f.Add(c)
		}
		f.Type().Id("T").Int()
		src := fmt.Sprintf("%#v", f)
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, "x.go", src, parser.ParseComments)
		if err != nil {
			t.Errorf("%q: generated source does not parse: %v\n%s", text, err, src)
			continue
		}
		if len(file.Decls) != 1 {
			t.Errorf("%q: %d declarations, want only T:\n%s", text, len(file.Decls), src)
		}
		for _, line := range strings.Split(src, "\n") {
			if strings.HasPrefix(line, "//go:") {
				t.Errorf("%q: formed a directive: %s", text, line)
			}
		}
	}
}

func TestCommentLines(t *testing.T) {
	got := commentLines("\n\n first \r\n\tsecond  \n\n\nthird\n\n")
	want := []string{" first", "\tsecond", "", "", "third"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("commentLines = %q, want %q", got, want)
	}
}

func TestWrap(t *testing.T) {
	long := strings.Repeat("word ", 30)
	tests := []struct {
		name, line string
		want       []string
	}{
		{"short line", "short line", []string{"short line"}},
		{"prose wraps at spaces", strings.TrimSpace(long), []string{
			strings.TrimSpace(strings.Repeat("word ", 15)),
			strings.TrimSpace(strings.Repeat("word ", 15)),
		}},
		{"code block stays", "\t" + long, []string{"\t" + long}},
		{"list item stays", "- " + long, []string{"- " + long}},
		{"numbered item stays", "1. " + long, []string{"1. " + long}},
		{"long word keeps its line", "see " + strings.Repeat("x", 90) + " here", []string{"see", strings.Repeat("x", 90), "here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wrap(tt.line)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("wrap(%q) =\n%q\nwant\n%q", tt.line, got, tt.want)
			}
			for _, l := range got {
				if len(l) > commentWidth && isProse(tt.line) && strings.Contains(l, " ") {
					t.Errorf("line of %d bytes: %q", len(l), l)
				}
			}
		})
	}
}
