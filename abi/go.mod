module github.com/ruled-dev/ruled/abi

go 1.26
