package rules

import (
	"errors"
	"slices"
	"strings"

	"github.com/ruled-dev/ruled/abi"
)

// fakeCatalog is the first-party plugins as a Catalog: plugin → function →
// kind.
type fakeCatalog map[string]map[string]abi.Kind

var plugins = fakeCatalog{
	"expr":    {"expr": abi.KindCondition},
	"publish": {"publish": abi.KindAction},
	"log":     {"log": abi.KindAction},
}

func (c fakeCatalog) Function(plugin, function string) (abi.Kind, bool) {
	k, ok := c[plugin][function]
	return k, ok
}

func (c fakeCatalog) Plugins() []string {
	var names []string
	for p := range c {
		names = append(names, p)
	}
	return names
}

func (c fakeCatalog) Functions(plugin string) []string {
	var names []string
	for f := range c[plugin] {
		names = append(names, f)
	}
	slices.Sort(names)
	return names
}

var _ FunctionLister = fakeCatalog{}

// failingCatalog is plugins with some whose files did not load, and why.
type failingCatalog struct {
	fakeCatalog
	failed map[string]string
}

func (c failingCatalog) NotLoaded(plugin string) (string, bool) {
	why, ok := c.failed[plugin]
	return why, ok
}

var _ LoadReporter = failingCatalog{}

// checkingCatalog also checks configs: log.log needs a message, and
// expr.expr refuses an expression with "<" and nothing after it.
type checkingCatalog struct {
	fakeCatalog
	asked []string
}

func (c *checkingCatalog) CheckConfig(plugin, function string, config []byte) error {
	c.asked = append(c.asked, plugin+"."+function+" "+string(config))
	switch {
	case plugin == "log" && !strings.Contains(string(config), `"message"`):
		return &Error{Msg: "log.log: config needs message", Hint: `e.g. {"message": "hi"}`}
	case plugin == "expr" && strings.HasSuffix(string(config), `<"}`):
		return errors.New("unexpected end of expression")
	}
	return nil
}

var _ ConfigChecker = (*checkingCatalog)(nil)

// errText is the errors' texts, one a line.
func errText(errs []*Error) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}
