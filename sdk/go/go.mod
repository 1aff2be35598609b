module github.com/ruled-dev/ruled/sdk/go

go 1.26

require github.com/ruled-dev/ruled/abi v0.1.0

replace github.com/ruled-dev/ruled/abi => ../../abi
