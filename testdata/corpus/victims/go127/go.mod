module corpusvictims127

go 1.27
