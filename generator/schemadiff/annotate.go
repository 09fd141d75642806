package schemadiff

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
)

// Annotations put each change on the line it is about, where a pull
// request is reviewed: GitHub's workflow commands, and SARIF 2.1.0 for
// code-scanning tools. A change in the old directory only (a removed
// property) is put on the same file of the new directory, without a line:
// the line it had is gone.

// annotationFile returns the file a change is shown on, relative to where
// warren diff ran, and its line and column (0 when the file as a whole).
func (l Labels) annotationFile(p Pos) (file string, line, col int) {
	root := l.New
	file = p.File
	if root != "" && root != "." {
		file = path.Join(root, p.File)
	}
	if p.Side != New {
		return file, 0, 0
	}
	return file, p.Line, p.Col
}

// annotationText is a change's message with what it breaks and, for a
// change that breaks its fact in some direction, the deploy order of that
// fact: an annotation is read on its own, beside the line it is about,
// where the report's deploy orders are not.
func (r *Report) annotationText(c Change) string {
	msg := c.subject() + ": " + c.Message
	if note := c.breaksNote(plain, plain); note != "" {
		msg += "; " + note
	}
	if d, ok := r.deployOf(c); ok {
		msg += ". Deploy order: " + d.Message
	}
	return msg
}

// githubLevel maps a verdict to a workflow command.
var githubLevel = map[Verdict]string{Breaking: "error", Intentional: "warning", Ordered: "warning", Compatible: "notice"}

// WriteGitHub prints one GitHub Actions workflow command per change
// (`::error file=events/order/placed.json,line=32,col=13,title=...::...`):
// breaking changes as errors, intentional and ordered ones as warnings,
// compatible ones as notices, each change that breaks its fact with the
// fact's deploy order; then each migration and the summary as notices.
func (r *Report) WriteGitHub(w io.Writer, l Labels) error {
	var b strings.Builder
	for _, c := range r.Changes {
		file, line, col := l.annotationFile(c.Pos)
		props := "file=" + ghProperty(file)
		if line > 0 {
			props += fmt.Sprintf(",line=%d", line)
			if col > 0 {
				props += fmt.Sprintf(",col=%d", col)
			}
		}
		props += ",title=" + ghProperty(fmt.Sprintf("warren diff: %s (%s)", c.Rule, c.Verdict))
		fmt.Fprintf(&b, "::%s %s::%s\n", githubLevel[c.Verdict], props, ghData(r.annotationText(c)))
	}
	for _, m := range r.Migrations {
		fmt.Fprintf(&b, "::notice title=%s::%s\n", ghProperty("warren diff: migration of "+m.Fact), ghData(m.Message))
	}
	fmt.Fprintf(&b, "::notice title=warren diff::%s\n", ghData(r.summary()))
	_, err := io.WriteString(w, b.String())
	return err
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// SARIFSchema is the JSON Schema the SARIF report names, that of SARIF
// 2.1.0 as code-scanning tools read it.
const SARIFSchema = "https://json.schemastore.org/sarif-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	ShortDescription sarifMessage `json:"shortDescription"`
	Properties       sarifProps   `json:"properties"`
}

type sarifProps map[string]any

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Level      string          `json:"level"`
	Message    sarifMessage    `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Properties sarifProps      `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// sarifLevel maps a verdict to a result's level.
var sarifLevel = map[Verdict]string{Breaking: "error", Intentional: "warning", Ordered: "warning", Compatible: "note"}

// WriteSARIF writes the report as a SARIF 2.1.0 log: one run of tool
// "warren diff" whose rules are warren's diff rules, one result per change
// at its file and line, the verdict, the directions it breaks and the mode
// in the result's properties, with the migration and the deploy order of
// its fact when it breaks it (the deploy order in its message too).
func (r *Report) WriteSARIF(w io.Writer, l Labels) error {
	driver := sarifDriver{Name: "warren diff", InformationURI: "https://github.com/warrenbus/warren/blob/main/docs/CLI.md#warren-diff"}
	index := map[string]int{}
	for i, rule := range Rules {
		index[rule.Name] = i
		driver.Rules = append(driver.Rules, sarifRule{ID: rule.Name, ShortDescription: sarifMessage{Text: rule.Doc}, Properties: sarifProps{"breaks": rule.Breaks.String()}})
	}
	results := []sarifResult{}
	for _, c := range r.Changes {
		file, line, col := l.annotationFile(c.Pos)
		loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: file}}}
		if line > 0 {
			loc.PhysicalLocation.Region = &sarifRegion{StartLine: line, StartColumn: col}
		}
		res := sarifResult{
			RuleID: c.Rule, RuleIndex: index[c.Rule], Level: sarifLevel[c.Verdict],
			Message:   sarifMessage{Text: r.annotationText(c)},
			Locations: []sarifLocation{loc},
			Properties: sarifProps{
				"verdict": string(c.Verdict), "breaks": c.Breaks.String(), "mode": string(c.Mode),
				"fact": c.Fact, "pointer": c.Pos.Pointer,
			},
		}
		if c.Consumer != "" {
			res.Properties["consumer"] = c.Consumer
		}
		if m, ok := r.migration(c.Fact); ok && c.Breaks != Neither {
			res.Properties["migration"] = m.Message
		}
		if d, ok := r.deployOf(c); ok {
			res.Properties["deploy"] = d.Message
		}
		results = append(results, res)
	}
	log := sarifLog{Schema: SARIFSchema, Version: "2.1.0", Runs: []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}}}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(log)
}
