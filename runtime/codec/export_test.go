package codec

// PatternEngine names the engine that runs p: "RE2", "ECMAScript" or
// "Go syntax".
func PatternEngine(p *Pattern) (string, error) {
	re, err := p.compiled()
	if err != nil {
		return "", err
	}
	return re.Engine().String(), nil
}
