module github.com/drainguard/drainguard/clients/go

go 1.19
