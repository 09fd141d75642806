// Package docs holds no code: its test checks the links of the README and of
// the pages in this folder.
package docs

import (
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// The pages that must link to every reference page in docs/: a page that
// neither links to cannot be found.
const (
	readme = "README.md"
	design = "docs/DESIGN.md"
)

// TestLinks checks README.md, every page in docs/ and every other Markdown
// file of the repository (outside testdata and node_modules): each relative
// link must reach a file that exists, each #anchor a heading of its page,
// and each page in docs/ must be linked from README.md or docs/DESIGN.md.
// Links with a scheme (https:, mailto:) are not followed.
func TestLinks(t *testing.T) {
	root := os.DirFS("..")
	pages, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{readme, design} {
		if !slices.Contains(pages, want) {
			t.Fatalf("%s not found among %v", want, pages)
		}
	}
	problems, err := checkLinks(root, pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckLinksReportsEachProblem runs the checker on a small repository
// with one of each problem, and on links that are fine.
func TestCheckLinksReportsEachProblem(t *testing.T) {
	fsys := mapFS(map[string]string{
		readme: "# Project\n\n" +
			"See [the guide](docs/GUIDE.md), [its setup](docs/GUIDE.md#setup-step-by-step),\n" +
			"[a missing page](docs/MISSING.md) and [a bad anchor](docs/GUIDE.md#no-such-heading).\n" +
			"[Design](docs/DESIGN.md), [home](https://example.com/x.md), [mail](mailto:a@example.com).\n" +
			"Not a link: `[x](nowhere.md)`.\n\n" +
			"## Usage\n\n[up](#usage), [down](#nowhere).\n",
		"docs/DESIGN.md": "# Design\n\n[guide](GUIDE.md) [outside](../../etc/passwd) [readme](../README.md#project)\n\n" +
			"| page | link |\n|---|---|\n| guide | [second intro](GUIDE.md#intro-2) |\n",
		"docs/GUIDE.md": "# Guide\n\n## Setup, step by step\n\n## Intro\n\n## Intro\n\n" +
			"[first](#intro) [second](#intro-1) ![shot](shot.png) ![gone](gone.png)\n" +
			"[code](../main.go#L3) [folder](../cmd/)\n",
		"docs/ORPHAN.md":     "# Orphan\n",
		"docs/shot.png":      "",
		"main.go":            "package main\n",
		"cmd/tool/main.go":   "package main\n",
		"examples/x/NOTE.md": "[guide](../../docs/GUIDE.md#intro) [bad](../../docs/GUIDE.md#outro)\n",
	})
	pages, err := markdownFiles(fsys)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := checkLinks(fsys, pages)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		"README.md:4: docs/MISSING.md does not exist",
		"README.md:4: docs/GUIDE.md has no heading for #no-such-heading",
		"README.md:10: README.md has no heading for #nowhere",
		"docs/DESIGN.md:3: ../../etc/passwd is outside the repository",
		"docs/DESIGN.md:7: docs/GUIDE.md has no heading for #intro-2",
		"docs/GUIDE.md:9: docs/gone.png does not exist",
		"docs/ORPHAN.md: linked from neither README.md nor docs/DESIGN.md",
		"examples/x/NOTE.md:1: docs/GUIDE.md has no heading for #outro",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return m
}

func TestSlugs(t *testing.T) {
	s := slugger{}
	for _, c := range []struct{ heading, want string }{
		{"One team's facts, many teams' consumers", "one-teams-facts-many-teams-consumers"},
		{"Requests (request/reply)", "requests-requestreply"},
		{"Backpressure: bounded work queues", "backpressure-bounded-work-queues"},
		{"x-routing-key and snake_case", "x-routing-key-and-snake_case"},
		{"Ünïcode 2020-12", "ünïcode-2020-12"},
		{"Intro", "intro"},
		{"Intro", "intro-1"},
		{"Intro", "intro-2"},
		{"Intro-1", "intro-1-1"},
	} {
		if got := s.slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// A problem is a broken link (with the line it is on) or an unlinked page
// (line 0).
type problem struct {
	file string
	line int
	msg  string
}

func (p problem) String() string {
	if p.line == 0 {
		return p.file + ": " + p.msg
	}
	return fmt.Sprintf("%s:%d: %s", p.file, p.line, p.msg)
}

// A link is one link or image of a page.
type link struct {
	line int
	dest string
}

// A page is what the checker needs of one Markdown file.
type page struct {
	links   []link
	anchors map[string]bool
}

var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

// parsePage finds the links and heading anchors of a Markdown file.
func parsePage(src []byte) page {
	doc := md.Parser().Parse(text.NewReader(src))
	p := page{anchors: map[string]bool{}}
	slugs := slugger{}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			p.anchors[slugs.slug(plainText(n, src))] = true
		case *ast.Link:
			p.links = append(p.links, link{line: lineOf(n, src), dest: string(n.Destination)})
		case *ast.Image:
			p.links = append(p.links, link{line: lineOf(n, src), dest: string(n.Destination)})
		}
		return ast.WalkContinue, nil
	})
	return p
}

// plainText is the text of n as it renders: the text of its inline
// children, code spans included, without markup.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// lineOf is the 1-based line on which inline node n starts: that of the
// first text inside it, else of the block that holds it.
func lineOf(n ast.Node, src []byte) int {
	offset := -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			offset = t.Segment.Start
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	for b := n; offset < 0 && b != nil; b = b.Parent() {
		if b.Type() == ast.TypeBlock && b.Lines().Len() > 0 {
			offset = b.Lines().At(0).Start
		}
	}
	if offset < 0 {
		return 1
	}
	return 1 + bytes.Count(src[:offset], []byte("\n"))
}

// slugger gives headings the anchors GitHub gives them: lower case, every
// character but letters, digits, '-', '_' and spaces dropped, spaces turned
// into '-', and a repeated slug numbered -1, -2, ...
type slugger map[string]int

func (s slugger) slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	base := b.String()
	slug := base
	for {
		if _, taken := s[slug]; !taken {
			break
		}
		s[base]++
		slug = fmt.Sprintf("%s-%d", base, s[base])
	}
	s[slug] = 0
	return slug
}

// markdownFiles lists the Markdown files of fsys, sorted, leaving out
// hidden folders, testdata (fixtures and expected outputs, not pages) and
// node_modules.
func markdownFiles(fsys fs.FS) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			base := path.Base(name)
			if name != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			files = append(files, name)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// checkLinks checks the links of the Markdown files names (slash-separated
// paths from the root of fsys), and that every page directly in docs/ is
// linked from README.md or docs/DESIGN.md.
func checkLinks(fsys fs.FS, names []string) ([]problem, error) {
	pages := map[string]page{}
	load := func(name string) (page, error) {
		if p, ok := pages[name]; ok {
			return p, nil
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return page{}, err
		}
		pages[name] = parsePage(src)
		return pages[name], nil
	}
	var problems []problem
	linkedFrom := map[string]map[string]bool{} // target -> the pages linking to it
	for _, name := range names {
		p, err := load(name)
		if err != nil {
			return nil, err
		}
		for _, l := range p.links {
			target, anchor, ok, err := resolve(name, l.dest)
			report := func(format string, args ...any) {
				problems = append(problems, problem{name, l.line, fmt.Sprintf(format, args...)})
			}
			switch {
			case err != nil:
				report("%v", err)
				continue
			case !ok:
				continue // a URL with a scheme
			case target == ".." || strings.HasPrefix(target, "../"):
				report("%s is outside the repository", l.dest)
				continue
			}
			if _, err := fs.Stat(fsys, target); err != nil {
				report("%s does not exist", target)
				continue
			}
			if linkedFrom[target] == nil {
				linkedFrom[target] = map[string]bool{}
			}
			linkedFrom[target][name] = true
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			tp, err := load(target)
			if err != nil {
				return nil, err
			}
			if !tp.anchors[anchor] {
				report("%s has no heading for #%s", target, anchor)
			}
		}
	}
	for _, name := range names {
		if path.Dir(name) != "docs" {
			continue
		}
		from := linkedFrom[name]
		if !from[readme] && !(from[design] && name != design) {
			problems = append(problems, problem{file: name, msg: "linked from neither " + readme + " nor " + design})
		}
	}
	slices.SortStableFunc(problems, func(a, b problem) int {
		return cmp.Or(strings.Compare(a.file, b.file), cmp.Compare(a.line, b.line))
	})
	return problems, nil
}

// resolve turns the destination of a link on page from into the path it
// reaches from the root and its anchor. ok is false for a URL with a
// scheme, which is not checked.
func resolve(from, dest string) (target, anchor string, ok bool, err error) {
	u, err := url.Parse(dest)
	if err != nil {
		return "", "", false, fmt.Errorf("link %q: %v", dest, err)
	}
	if u.Scheme != "" || u.Host != "" {
		return "", "", false, nil
	}
	anchor = u.Fragment
	switch {
	case u.Path == "":
		target = from
	case strings.HasPrefix(u.Path, "/"):
		target = path.Clean(strings.TrimPrefix(u.Path, "/"))
	default:
		target = path.Join(path.Dir(from), u.Path)
	}
	return target, anchor, true, nil
}
