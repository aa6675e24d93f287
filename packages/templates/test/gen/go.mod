module gatehook.dev/templates/gen

go 1.19
