module drainguard.dev/client

go 1.19
