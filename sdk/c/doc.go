// Package csdk is the C SDK's sources, for `ruled new plugin --lang c`,
// which writes them into a new plugin's directory: the SDK is a header
// and one C file built with the plugin, not a library to install.
package csdk
