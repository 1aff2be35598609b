package csdk

import "embed"

// Files are ruled/ruled.h, ruled/ruled.c and ruled/build.sh.
//
//go:embed ruled/ruled.h ruled/ruled.c ruled/build.sh
var Files embed.FS
