module corpusvictims

go 1.22
