// Package sun owns where the sun is: its elevation and azimuth at a
// place and a time, and when it rises, sets, reaches noon, and when civil
// dawn and dusk fall, by NOAA's solar calculator (the equations of Jean
// Meeus' Astronomical Algorithms as NOAA's Global Monitoring Laboratory
// publishes them in its spreadsheet and its web calculator).
//
// It refuses clocks, timers, zones and stores: a time goes in and a time
// comes out, in UTC. What an occurrence means for a rule — its offset,
// its missed: policy, its record — is host/schedule's and host/rules'.
//
// Accuracy: NOAA gives its calculator as within a minute for latitudes
// between ±72°, and worse towards the poles, where the sun grazes the
// horizon and a hundredth of a degree moves a rise by minutes. The tests
// hold it to published times (planetariums, almanacs, the Svalbard
// community's) within a minute or two, and to the published dates of
// the midnight sun and the polar night at 78° N.
package sun
