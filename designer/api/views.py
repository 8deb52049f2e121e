"""REST endpoints (contract: the OpenAPI schema at /api/schema/). Each view parses with a serializer, calls a
selector or a service, and renders; rules live in services, scoping in selectors."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from designer import analysis as doc_analysis
from designer import catalog, selectors
from designer.access import grants as grant_services
from designer.access import invitations as invitation_services
from designer.access import teams as team_services
from designer.api import serializers as s
from designer.api.parsers import LimitedJSONParser
from designer.api.schema import DOCUMENT_SCHEMA
from designer.filters import WorkflowFilter, apply_filters, openapi_parameters
from designer.json_text import pretty_json
from designer.permissions import DUPLICATE_RULE, SEE_SHARING, SHARING_RULE, require_own_team_role, require_role
from designer.workflows import services as workflow_services

ERRORS = {400: s.ErrorSerializer, 403: s.ErrorSerializer, 404: s.ErrorSerializer}


def parse(serializer_class: type[s.serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class BaseAPIView(APIView):
    parser_classes = [LimitedJSONParser]


# --- the root ----------------------------------------------------------------


API_ROOT = {"teams": "api:team-list", "workflows": "api:workflow-list", "runs": "api:run-list",
            "tasks": "api:task-list", "invitations": "api:invitation-list", "schema": "api-schema", "docs": "api-docs"}


class ApiRootView(BaseAPIView):
    """``/api/``: where the collections are (the browsable API's breadcrumbs link here; it was a 404)."""

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        return Response({name: request.build_absolute_uri(reverse(url_name)) for name, url_name in API_ROOT.items()})


# --- teams -------------------------------------------------------------------


def _team_detail(request: Request, team_id: object) -> dict[str, Any]:
    team = selectors.get_team(user=request.user, team_id=team_id)
    members = selectors.members_of(team)
    return s.TeamDetailSerializer(team, context={"members": members}).data


class TeamListView(BaseAPIView):
    @extend_schema(responses={200: s.TeamSerializer(many=True)}, operation_id="teams_list")
    def get(self, request: Request) -> Response:
        return Response(s.TeamSerializer(selectors.teams_for(user=request.user), many=True).data)

    @extend_schema(request=s.TeamCreateSerializer, responses={201: s.TeamDetailSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = parse(s.TeamCreateSerializer, request.data)
        team = team_services.create_team(actor=request.user, name=data["name"])
        return Response(_team_detail(request, team.pk), status=status.HTTP_201_CREATED)


class TeamDetailView(BaseAPIView):
    @extend_schema(responses={200: s.TeamDetailSerializer, **ERRORS})
    def get(self, request: Request, team_id: int) -> Response:
        return Response(_team_detail(request, team_id))


class TeamMembersView(BaseAPIView):
    @extend_schema(responses={200: s.MemberSerializer(many=True), **ERRORS}, operation_id="teams_members_list")
    def get(self, request: Request, team_id: int) -> Response:
        team = selectors.get_team(user=request.user, team_id=team_id)
        return Response(s.MemberSerializer(selectors.members_of(team), many=True).data)


class TeamInvitationsView(BaseAPIView):
    @extend_schema(responses={200: s.InvitationSerializer(many=True), **ERRORS},
                   operation_id="teams_invitations_list", description="Pending invitations (owners only).")
    def get(self, request: Request, team_id: int) -> Response:
        team = selectors.get_team(user=request.user, team_id=team_id)
        require_role(request.user, team, "owner", what="this team")
        return Response(s.InvitationSerializer(selectors.pending_invitations_of(team), many=True).data)

    @extend_schema(
        request=s.InviteSerializer, responses={201: s.InvitationSerializer, **ERRORS, 429: s.ErrorSerializer},
        description="Invite someone (owners only). Nobody becomes a member until they accept. The answer is the "
                    "same whether or not the username or email belongs to an account. 429 (invitation.rate_limited, "
                    "with Retry-After) past the sender's invitations an hour (TRELLIS_INVITATIONS_PER_INVITER) or "
                    "the recipient's a day (TRELLIS_INVITATIONS_PER_ADDRESS).",
    )
    def post(self, request: Request, team_id: int) -> Response:
        team = selectors.get_team(user=request.user, team_id=team_id)
        data = parse(s.InviteSerializer, request.data)
        sent = invitation_services.invite(actor=request.user, team=team, user=data["user"], role=data["role"],
                                          site_url=request.build_absolute_uri("/"))
        return Response(s.InvitationSerializer(sent.invitation).data, status=status.HTTP_201_CREATED)


class TeamInvitationView(BaseAPIView):
    @extend_schema(responses={204: None, **ERRORS, 409: s.ErrorSerializer},
                   description="Revoke a pending invitation (owners only); its link stops working.")
    def delete(self, request: Request, team_id: int, invitation_id: int) -> Response:
        team = selectors.get_team(user=request.user, team_id=team_id)
        invitation_services.revoke_invitation(actor=request.user, team=team, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamSharedView(BaseAPIView):
    @extend_schema(responses={200: s.GrantSerializer(many=True), **ERRORS}, operation_id="teams_shared_list",
                   description="Other teams' workflows shared with this team, with the granted role.")
    def get(self, request: Request, team_id: int) -> Response:
        team = selectors.get_team(user=request.user, team_id=team_id)
        return Response(s.GrantSerializer(selectors.shared_with(team), many=True).data)


class MyInvitationsView(BaseAPIView):
    @extend_schema(responses={200: s.MyInvitationSerializer(many=True)}, operation_id="invitations_list",
                   description="Open invitations addressed to you.")
    def get(self, request: Request) -> Response:
        return Response(s.MyInvitationSerializer(selectors.invitations_for(user=request.user), many=True).data)


class InvitationAcceptView(BaseAPIView):
    @extend_schema(request=None, responses={200: s.MemberSerializer, **ERRORS, 409: s.ErrorSerializer},
                   description="Join the team with the invited role.")
    def post(self, request: Request, invitation_id: int) -> Response:
        invitation = selectors.get_invitation_for(user=request.user, invitation_id=invitation_id)
        membership = invitation_services.accept_invitation(actor=request.user, invitation=invitation)
        return Response(s.MemberSerializer(membership).data)


class InvitationDeclineView(BaseAPIView):
    @extend_schema(request=None, responses={200: s.MyInvitationSerializer, **ERRORS, 409: s.ErrorSerializer})
    def post(self, request: Request, invitation_id: int) -> Response:
        invitation = selectors.get_invitation_for(user=request.user, invitation_id=invitation_id)
        declined = invitation_services.decline_invitation(actor=request.user, invitation=invitation)
        return Response(s.MyInvitationSerializer(declined).data)


class TeamMemberView(BaseAPIView):
    @extend_schema(request=s.MemberUpdateSerializer, responses={200: s.MemberSerializer, **ERRORS})
    def patch(self, request: Request, team_id: int, user_id: int) -> Response:
        team = selectors.get_team(user=request.user, team_id=team_id)
        data = parse(s.MemberUpdateSerializer, request.data)
        membership = team_services.change_member_role(actor=request.user, team=team, user_id=user_id,
                                                      role=data["role"])
        return Response(s.MemberSerializer(membership).data)

    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request: Request, team_id: int, user_id: int) -> Response:
        team = selectors.get_team(user=request.user, team_id=team_id)
        team_services.remove_member(actor=request.user, team=team, user_id=user_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- workflows ---------------------------------------------------------------


def _workflow(request: Request, workflow_id: object) -> Any:
    return selectors.get_workflow(user=request.user, workflow_id=workflow_id)


def _workflow_json(request: Request, workflow_id: object) -> dict[str, Any]:
    # Re-read through the selector so the response carries the annotations (latest_version, how it is reached).
    marked = selectors.mark_access(user=request.user, workflows=[_workflow(request, workflow_id)])
    return s.WorkflowSerializer(marked[0]).data


class WorkflowListView(BaseAPIView):
    @extend_schema(
        parameters=openapi_parameters(WorkflowFilter),
        responses={200: s.WorkflowSerializer(many=True)},
        operation_id="workflows_list",
        description="Your teams' workflows and those other teams share with yours (`shared`: true, with the "
                    "holding team and the granted role).",
    )
    def get(self, request: Request) -> Response:
        workflows = apply_filters(WorkflowFilter, request.query_params, selectors.workflows_for(user=request.user),
                                  request=request, strict=True).queryset
        marked = selectors.mark_access(user=request.user, workflows=workflows)
        return Response(s.WorkflowSerializer(marked, many=True).data)

    @extend_schema(request=s.WorkflowCreateSerializer, responses={201: s.WorkflowSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = parse(s.WorkflowCreateSerializer, request.data)
        workflow = workflow_services.create_workflow(
            actor=request.user, team=data["team"], name=data["name"], description=data["description"],
            document=data["document"],
        )
        return Response(_workflow_json(request, workflow.pk), status=status.HTTP_201_CREATED)


class WorkflowDetailView(BaseAPIView):
    @extend_schema(responses={200: s.WorkflowSerializer, **ERRORS})
    def get(self, request: Request, workflow_id: int) -> Response:
        return Response(_workflow_json(request, workflow_id))

    @extend_schema(request=s.WorkflowUpdateSerializer, responses={200: s.WorkflowSerializer, **ERRORS})
    def patch(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        data = parse(s.WorkflowUpdateSerializer, request.data)
        workflow_services.update_workflow(actor=request.user, workflow=workflow, **data)
        return Response(_workflow_json(request, workflow_id))

    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request: Request, workflow_id: int) -> Response:
        workflow_services.delete_workflow(actor=request.user, workflow=_workflow(request, workflow_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkflowDuplicateView(BaseAPIView):
    @extend_schema(request=s.DuplicateSerializer, responses={201: s.WorkflowSerializer, **ERRORS},
                   description=f"Copy the current draft into the same or another team. {DUPLICATE_RULE}")
    def post(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        data = parse(s.DuplicateSerializer, request.data)
        copy = workflow_services.duplicate_workflow(actor=request.user, workflow=workflow, team=data["team"],
                                                    name=data["name"])
        return Response(_workflow_json(request, copy.pk), status=status.HTTP_201_CREATED)


class WorkflowGrantsView(BaseAPIView):
    @extend_schema(responses={200: s.GrantSerializer(many=True), **ERRORS}, operation_id="workflows_grants_list",
                   description=f"Teams this workflow is shared with. {SHARING_RULE}")
    def get(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        require_own_team_role(request.user, workflow, "viewer", action=SEE_SHARING)
        return Response(s.GrantSerializer(selectors.grants_of(workflow), many=True).data)

    @extend_schema(request=s.GrantCreateSerializer, responses={201: s.GrantSerializer, **ERRORS},
                   description="Share the workflow with another team (owners of its team). Sharing again with the "
                               "same team changes the role.")
    def post(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        data = parse(s.GrantCreateSerializer, request.data)
        grant = grant_services.grant_workflow(actor=request.user, workflow=workflow, team=data["team"],
                                              role=data["role"])
        return Response(s.GrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class WorkflowGrantView(BaseAPIView):
    @extend_schema(responses={204: None, **ERRORS}, description="Stop sharing (owners of the workflow's team).")
    def delete(self, request: Request, workflow_id: int, grant_id: int) -> Response:
        grant_services.revoke_grant(actor=request.user, workflow=_workflow(request, workflow_id), grant_id=grant_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkflowImportView(BaseAPIView):
    @extend_schema(request=s.ImportSerializer, responses={201: s.WorkflowSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = parse(s.ImportSerializer, request.data)
        workflow = workflow_services.import_workflow(actor=request.user, team=data["team"],
                                                     document=data["document"], name=data["name"])
        return Response(_workflow_json(request, workflow.pk), status=status.HTTP_201_CREATED)


class WorkflowExportView(BaseAPIView):
    # The export is the draft's document itself (a file to keep or import): typed as one, so a generated client
    # parses it into its document model rather than a bare object.
    @extend_schema(responses={(200, "application/json"): DOCUMENT_SCHEMA, **ERRORS})
    def get(self, request: Request, workflow_id: int) -> HttpResponse:
        workflow = _workflow(request, workflow_id)
        response = HttpResponse(pretty_json(workflow.document) + "\n",
                                content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{workflow.slug}.json"'
        return response


def _document_body(workflow: Any, analysis: Any) -> dict[str, Any]:
    return {
        "revision": workflow.revision,
        "document": workflow.document,
        "diagnostics": doc_analysis.diagnostics_json(analysis),
        "analysis": doc_analysis.summary(analysis),
    }


class WorkflowDocumentView(BaseAPIView):
    @extend_schema(responses={200: s.DocumentSerializer, **ERRORS})
    def get(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        # The stored draft's analysis is computed once per saved revision (the editor reloads after each edit).
        return Response(_document_body(workflow, doc_analysis.analysis_for(workflow)))

    @extend_schema(request=s.DocumentPutSerializer,
                   responses={200: s.DocumentSerializer, 409: s.ErrorSerializer, **ERRORS})
    def put(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        data = parse(s.DocumentPutSerializer, request.data)
        saved = workflow_services.save_document(actor=request.user, workflow=workflow, revision=data["revision"],
                                                document=data["document"])
        return Response(_document_body(saved.workflow, saved.analysis))


class WorkflowValidateView(BaseAPIView):
    read_only_safe = True  # POST only checks the document it is sent; a read-only token may call it
    def _validate(self, request: Request, workflow_id: int, document: Any) -> Response:
        workflow = _workflow(request, workflow_id)
        if document is None:
            return Response(doc_analysis.summary(doc_analysis.analysis_for(workflow)))
        parsed = doc_analysis.parse_document(document)
        return Response(doc_analysis.summary(doc_analysis.analyze_document(parsed, team=workflow.team_id)))

    @extend_schema(responses={200: s.ValidationResultSerializer, **ERRORS}, operation_id="workflows_validate_draft")
    def get(self, request: Request, workflow_id: int) -> Response:
        return self._validate(request, workflow_id, None)

    @extend_schema(request=s.ValidateSerializer, responses={200: s.ValidationResultSerializer, **ERRORS})
    def post(self, request: Request, workflow_id: int) -> Response:
        # No body checks the stored draft; a body that is not a JSON object (null, false) is a 400, as the schema says.
        data = parse(s.ValidateSerializer, request.data if not isinstance(request.data, dict) else (request.data or {}))
        return self._validate(request, workflow_id, data["document"])


class WorkflowAnalysisView(BaseAPIView):
    @extend_schema(parameters=[s.AnalysisQuerySerializer], responses={200: s.NodeAnalysisSerializer, **ERRORS})
    def get(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        query = parse(s.AnalysisQuerySerializer, request.query_params)
        parsed = doc_analysis.parse_document(workflow.document)
        analysis = doc_analysis.analyze_document(parsed, team=workflow.team_id)
        return Response(doc_analysis.node_report(
            analysis, query["node"], field=query["field"] or None, want=query["want"], show_all=query["all"]
        ))


class WorkflowPublishView(BaseAPIView):
    @extend_schema(request=s.PublishSerializer, responses={201: s.VersionSerializer, **ERRORS})
    def post(self, request: Request, workflow_id: int) -> Response:
        data = parse(s.PublishSerializer, request.data or {})
        version = workflow_services.publish_workflow(actor=request.user, workflow=_workflow(request, workflow_id),
                                                     note=data.get("note", ""))
        return Response(s.VersionSerializer(version).data, status=status.HTTP_201_CREATED)


class WorkflowVersionListView(BaseAPIView):
    @extend_schema(responses={200: s.VersionSerializer(many=True), **ERRORS})
    def get(self, request: Request, workflow_id: int) -> Response:
        versions = selectors.versions_of(_workflow(request, workflow_id))
        return Response(s.VersionSerializer(versions, many=True).data)


class WorkflowVersionDetailView(BaseAPIView):
    @extend_schema(responses={200: s.VersionDetailSerializer, **ERRORS})
    def get(self, request: Request, workflow_id: int, number: int) -> Response:
        version = selectors.get_version(workflow=_workflow(request, workflow_id), number=number)
        return Response(s.VersionDetailSerializer(version).data)


# --- tasks -------------------------------------------------------------------


class TaskListView(BaseAPIView):
    @extend_schema(responses={200: s.TaskSerializer(many=True)})
    def get(self, request: Request) -> Response:
        specs = sorted(catalog.registry(), key=lambda spec: spec.name)
        return Response(s.TaskSerializer(specs, many=True).data)
