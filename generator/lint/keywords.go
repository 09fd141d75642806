package lint

import "github.com/warrenbus/warren/generator/model"

// checkMisspelt warns of the probably misspelt keys that the model lets
// through: the keyword they are near is written beside them as well, or
// only documents ("descripton"). The others fail the model (see
// model.MisspeltKeywords), and so `warren check`, as errors.
func checkMisspelt(p *pass) {
	for _, m := range model.MisspeltKeywords(p.in.Schemas) {
		if !m.Severe {
			p.reportKey(p.rule, m.Doc, m.Pointer, "%s", m.Message())
		}
	}
}
