// Package suggest owns the did-you-mean of every error that names a word
// its author may have misspelt: a rule's key, a config file's setting, a
// flag, a plugin, an expression's function. One measure for all of them,
// so that a slip is caught the same way everywhere.
//
// It refuses knowing any vocabulary: the caller gives the candidates, and
// synonyms from other tools (delay for after) are the caller's own table.
// It owns no goroutine and no state.
package suggest
