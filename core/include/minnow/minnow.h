// Umbrella header of the Minnow core API.
#pragma once
#include <minnow/engine.h>
#include <minnow/ir.h>
#include <minnow/model.h>
#include <minnow/model_builder.h>
#include <minnow/session.h>
#include <minnow/status.h>
#include <minnow/types.h>
#include <minnow/version.h>
